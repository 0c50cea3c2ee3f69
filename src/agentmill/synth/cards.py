"""Where capability cards come from: a JSONL file of cards, or written by a model from diagnosis.

From diagnosis: the target's and the teacher's rollouts on the evaluation tasks (run here, resumably,
unless `run_rollouts = false` says they exist) are classified
(diagnosis.py); for each `teach` task (and `stretch` when asked) the card writer reads one failing
target trajectory and one passing teacher trajectory and writes a card. Every written card passes the
information barrier (barrier.py) against its source task or is rejected and recorded, never used.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import ValidationError

from agentmill.agents.tools import ToolsAgent
from agentmill.errors import AgentmillError
from agentmill.models.client import ModelClient
from agentmill.rollout.config import RolloutConfig
from agentmill.rollout.folder import resolve_run_dir
from agentmill.rollout.ledger import Ledger
from agentmill.rollout.runner import run_rollout
from agentmill.synth.barrier import BarrierConfig, check_card_against_task
from agentmill.synth.card import GENERATOR_FIELDS, CapabilityCard
from agentmill.synth.config import SynthConfig
from agentmill.synth.diagnosis import classify, read_pass_counts
from agentmill.synth.llm import ask_json, dumps
from agentmill.synth.prompt_files import load_prompt
from agentmill.synth.store import SynthStore
from agentmill.tasks import load_dataset


def read_cards(path: Path) -> tuple[list[CapabilityCard], list[str]]:
    """(cards, problems): a bad line is reported with its line number and skipped."""
    cards, problems, seen = [], [], set()
    try:
        lines = Path(path).read_text().splitlines()
    except FileNotFoundError:
        raise AgentmillError(f"{path}: no such cards file") from None
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            card = CapabilityCard.model_validate_json(line)
        except ValidationError as e:
            err = e.errors()[0]
            problems.append(f"{path}:{i}: field '{'.'.join(str(p) for p in err['loc'])}': {err['msg']}")
            continue
        if card.card_id in seen:
            problems.append(f"{path}:{i}: duplicate card_id '{card.card_id}'")
            continue
        seen.add(card.card_id)
        cards.append(card)
    return cards, problems


def _trajectory_text(run_dir: Path, task: str, want_pass: bool) -> str | None:
    """The steps of one trial of `task` that passed (or failed), as text the card writer reads."""
    run_dir = resolve_run_dir(run_dir)
    ledger = Ledger(run_dir / "ledger.sqlite")
    try:
        rows = [r for r in ledger.rows() if r["task"] == task and r["state"] == "done"]
    finally:
        ledger.close()
    for r in rows:
        if (r["outcome"] == "passed") != want_pass:
            continue
        path = run_dir / "trials" / r["trial_id"] / "trajectory.json"
        if path.is_file():
            steps = json.loads(path.read_text()).get("steps", [])
            return dumps(
                [{k: s.get(k) for k in ("source", "message", "tool_calls", "observation") if s.get(k)} for s in steps]
            )[:30000]
    return None


async def write_card(
    client: ModelClient, task_dir: Path, target_traj: str, teacher_traj: str, prompts: Path | None
) -> CapabilityCard | str:
    """The card, or why none could be written."""
    task = Path(task_dir).name
    user = (
        f"Task prompt:\n{(Path(task_dir) / 'instruction.md').read_text()}\n\n"
        f"Target model's failing trajectory:\n{target_traj}\n\nTeacher's successful trajectory:\n{teacher_traj}"
    )
    reply = await ask_json(client, load_prompt("card", prompts), user, CapabilityCard.writer_schema())
    if not isinstance(reply.data, dict):
        return f"card writer reply unusable: {reply.error}"
    fields = {k: reply.data.get(k) for k in GENERATOR_FIELDS if k in reply.data}
    card_id = "card-" + hashlib.sha256(task.encode()).hexdigest()[:10]
    try:
        return CapabilityCard(card_id=card_id, source_task=task, **fields)
    except ValidationError as e:
        err = e.errors()[0]
        return f"card writer reply is not a card: field '{'.'.join(str(p) for p in err['loc'])}': {err['msg']}"


async def diagnosis_rollout(tasks_dir: Path, run_dir: Path, client: ModelClient, attempts: int, max_turns: int) -> None:
    """The `tools` agent of one model on the evaluation tasks, k attempts each: a normal, resumable rollout."""
    tasks = load_dataset(tasks_dir).tasks
    config = RolloutConfig(
        dataset=str(tasks_dir),
        agent=ToolsAgent.name,
        agent_version=ToolsAgent.version,
        model=client.model,
        sampling=client.sampling,
        max_turns=max_turns,
        attempts=attempts,
        base_url=client.base_url,
    )
    await run_rollout(config, tasks, run_dir, client=client)


async def cards_from_diagnosis(
    config: SynthConfig, clients: dict[str, ModelClient], store: SynthStore
) -> tuple[list[CapabilityCard], list[str]]:
    d = config.diagnosis
    if d is None:  # the caller reads cards from the diagnosis only when the config has one
        raise AgentmillError("no [diagnosis] in the config: nothing to write cards from")
    client = clients["card_writer"]
    if d.run_rollouts:
        for role, run_dir in (("target", d.target_run), ("teacher", d.teacher_run)):
            await diagnosis_rollout(d.tasks, run_dir, clients[role], d.attempts, config.ballot.max_turns)
    diag = classify(read_pass_counts(d.target_run), read_pass_counts(d.teacher_run), d.thresholds)
    store.set_meta("diagnosis", diag.model_dump_json())
    labels = {"teach", "stretch"} if d.include_stretch else {"teach"}
    cards, problems = [], []
    for t in diag.tasks:
        if t.label not in labels:
            continue
        target = _trajectory_text(d.target_run, t.task, want_pass=False)
        teacher = _trajectory_text(d.teacher_run, t.task, want_pass=True) or _trajectory_text(
            d.teacher_run, t.task, False
        )
        if target is None or teacher is None:
            problems.append(f"{t.task}: no trajectories to read")
            continue
        card = await write_card(client, d.tasks / t.task, target, teacher, config.synth.prompts)
        if isinstance(card, str):
            problems.append(f"{t.task}: {card}")
            continue
        leaks = check_card_against_task(card, d.tasks / t.task, config.barrier or BarrierConfig())
        if leaks:
            store.barrier_rejection(card, [leak.model_dump() for leak in leaks])
            problems.append(
                f"{t.task}: card rejected by the information barrier: {leaks[0].kind} {leaks[0].value!r} "
                f"in {leaks[0].field}"
            )
            continue
        cards.append(card)
    return cards, problems
