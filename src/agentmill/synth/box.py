"""The Target box: one candidate from a card through the gates, with critique and targeted repair.

    generate -> [lint -> semantic -> positive -> negative -> ballot] -> accept
                   | a gate fails
                   v
                 critic (diagnosis) -> repair of the implicated components -> the gates again
                 (at most `max_repairs` repairs; every attempt, gate result, diagnosis, repair logged)

A generator reply that does not parse is a failed attempt with a diagnosis, and the next attempt
generates afresh. A fault that is not the candidate's (an endpoint down past the client's retries, a
broken sandbox) pauses the box (`outage_pause_s`, doubling) and runs the same step again, up to
`outage_retries` times; after that the box ends `interrupted`, never blamed on the candidate, and a
later run takes its card up again.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path

from agentmill.errors import TaskError
from agentmill.images import ImageBuilder
from agentmill.models.client import ModelClient
from agentmill.synth.candidate import (
    COMPONENTS,
    Candidate,
    CandidateBody,
    CandidateParseError,
    candidate_schema,
    parse_body,
    write_task_folder,
)
from agentmill.synth.config import SynthConfig
from agentmill.synth.critic import Diagnosis, ask_critic, gate_diagnosis, read_diagnosis, repair
from agentmill.synth.dedupe import novelty_at_acceptance
from agentmill.synth.gates.base import Gate, GateContext, GateResult
from agentmill.synth.llm import ask_json, dumps
from agentmill.synth.output import publish, write_jsonl
from agentmill.synth.prompt_files import load_prompt
from agentmill.synth.store import SynthStore
from agentmill.tasks.tool_task import load_tool_task


@dataclass
class BoxEnv:
    """Everything boxes share."""

    config: SynthConfig
    store: SynthStore
    clients: dict[str, ModelClient]
    gates: list[Gate]
    builder: ImageBuilder
    environment: str  # the gyms' tables and tools, as the generator reads them
    on_event: object = None  # callable(kind: str, **info) for progress
    gate_seconds: dict[str, float] = field(default_factory=dict)

    def emit(self, kind: str, **info) -> None:
        if callable(self.on_event):
            self.on_event(kind, **info)


async def _pause(env: BoxEnv, try_no: int, what: str) -> None:
    delay = env.config.synth.outage_pause_s * 2**try_no
    env.emit("pause", what=what, seconds=delay)
    await asyncio.sleep(delay)


async def _with_pauses(env: BoxEnv, what: str, ask):
    """`ask()` again after a pause while its endpoint is down (`.endpoint_failed`), at most `outage_retries` times."""
    for try_no in range(env.config.synth.outage_retries + 1):
        out = await ask()
        if not out.endpoint_failed or try_no == env.config.synth.outage_retries:
            return out
        await _pause(env, try_no, f"{what}: {getattr(out, 'error', '')}")


async def _generate(
    env: BoxEnv, card_view: dict, parent: Candidate | None
) -> tuple[CandidateBody | None, str, str | None]:
    for try_no in range(env.config.synth.outage_retries + 1):
        body, raw, error = await _generate_once(env, card_view, parent)
        if not (body is None and not raw and error and error.startswith("endpoint failed")):
            break
        if try_no < env.config.synth.outage_retries:
            await _pause(env, try_no, f"generator: {error}")
    return body, raw, error


async def _generate_once(
    env: BoxEnv, card_view: dict, parent: Candidate | None
) -> tuple[CandidateBody | None, str, str | None]:
    guidance = env.store.latest_guidance()
    user = (
        f"Environment:\n{env.environment}\n\nCapability card:\n{dumps(card_view)}\n"
        + (
            f"\nAccepted sample to vary (change the request, state, entities, reference and verifiers):\n"
            f"{dumps(parent.body.model_dump())}\n"
            if parent is not None
            else ""
        )
        + (f"\nGuidance from the last meta-review:\n{guidance}\n" if guidance else "")
    )
    prompt = load_prompt("multiply" if parent is not None else "generator", env.config.synth.prompts)
    reply = await ask_json(env.clients["generator"], prompt, user, candidate_schema())
    if reply.endpoint_failed or reply.context_exceeded:
        return None, "", reply.error
    if reply.data is None:
        return None, reply.text, reply.error
    try:
        return parse_body(dumps(reply.data)), reply.text, None
    except CandidateParseError as e:
        return None, reply.text, str(e)


async def run_gates(env: BoxEnv, cand: Candidate, work: Path, card_view: dict) -> list[GateResult]:
    """Write the candidate as a task folder and run the gates in order until one fails."""
    task_dir = work / cand.candidate_id
    write_task_folder(cand, task_dir, env.config.env)
    try:
        task = load_tool_task(task_dir)
    except TaskError as e:
        return [
            GateResult(
                gate="lint",
                passed=False,
                code="task_format",
                message=str(e)[:800],
                category="bad_task_composition",
                components=["verifiers", "calls"],
            )
        ]
    ctx = GateContext(
        candidate=cand,
        task=task,
        task_dir=task_dir,
        work_dir=work,
        builder=env.builder,
        clients=env.clients,
        settings=env.config,
        prompts=env.config.synth.prompts,
        card_view=card_view,
        accepted=env.store.accepted,
    )
    results = []
    for gate in env.gates:
        started = time.monotonic()
        for try_no in range(env.config.synth.outage_retries + 1):
            try:
                r = await gate.run(ctx)
            except Exception as e:  # noqa: BLE001 - a gate's own crash is the machinery's fault, never a crash of the run
                r = GateResult(
                    gate=gate.name,
                    passed=False,
                    code="gate_crashed",
                    fault="infra",
                    message=f"{type(e).__name__}: {e}"[:800],
                )
            if (
                r.passed
                or r.fault != "infra"
                or r.details.get("retry") is False
                or try_no == env.config.synth.outage_retries
            ):
                break
            await _pause(env, try_no, f"{gate.name}: {r.code}: {r.message[:200]}")
        r.seconds = time.monotonic() - started
        env.gate_seconds[gate.name] = env.gate_seconds.get(gate.name, 0.0) + r.seconds
        results.append(r)
        env.emit("gate", gate=gate.name, passed=r.passed, code=r.code)
        if not r.passed:
            break
    return results


async def run_box(
    env: BoxEnv, card_id: str, candidate_id: str, *, slot: int | None = None, parent: Candidate | None = None
) -> bool:
    """True when the candidate was accepted."""
    store, settings = env.store, env.config.synth
    card = store.card(card_id)
    card_view = card.generator_view()  # the information barrier: never the source task
    store.start_candidate(
        candidate_id, card_id, "multiply" if parent else "target", parent.candidate_id if parent else None, slot
    )
    env.emit("box_start", candidate=candidate_id, card=card_id)
    work = store.out / "work" / candidate_id
    body: CandidateBody | None = None
    repair_raw = ""  # the repair reply that made the next attempt's body, kept with that attempt
    last = "no attempt"
    for n in range(settings.max_repairs + 1):
        started = time.monotonic()
        origin = "generate" if body is None else "repair"
        if body is None:
            body, raw, error = await _generate(env, card_view, parent)
            if body is None:
                attempt = store.add_attempt(candidate_id, n, origin, None, raw, error)
                if not raw and error and error.startswith("endpoint failed"):
                    store.interrupt(candidate_id, f"infra: generator {error}")
                    env.emit("box_done", candidate=candidate_id, accepted=False)
                    return False
                if not raw and error and error.startswith("context exceeded"):
                    # the generator cannot hold the environment and the card: the configuration's fault
                    # (a model too small for the gym), never the candidate's; no pause will change it
                    store.add_gate(
                        attempt,
                        GateResult(
                            gate="generate", passed=False, code="context_exceeded", fault="infra", message=error[:800]
                        ),
                    )
                    store.finish_attempt(attempt, time.monotonic() - started)
                    store.interrupt(candidate_id, f"config: generator {error}"[:2000])
                    env.emit("gate", gate="generate", passed=False, code="context_exceeded")
                    env.emit("box_done", candidate=candidate_id, accepted=False)
                    return False
                unparsed = GateResult(
                    gate="parse",
                    passed=False,
                    code="unparseable",
                    message=error or "",
                    category="bad_task_composition",
                    components=list(COMPONENTS),
                )
                store.add_gate(attempt, unparsed)
                store.add_diagnosis(attempt, gate_diagnosis(unparsed, note="the generator's reply is not a candidate;"))
                store.finish_attempt(attempt, time.monotonic() - started)
                last = f"parse: unparseable: {error}"
                env.emit("gate", gate="parse", passed=False, code="unparseable")
                continue
        else:
            raw = repair_raw
        cand = Candidate(
            candidate_id=candidate_id,
            card_id=card_id,
            kind="multiply" if parent else "target",
            parent_id=parent.candidate_id if parent else None,
            body=body,
        )
        attempt = store.add_attempt(candidate_id, n, origin, body.model_dump_json(), raw, None)
        attempt_dir = work / f"a{n}"
        results = await run_gates(env, cand, attempt_dir, card_view)
        if results[-1].passed:  # no await from here to the commit: a sample another worker just accepted counts
            late = novelty_at_acceptance(cand, store.accepted(), env.config.synth.duplicate_threshold)
            results += [late] if late is not None else []
        for r in results:
            store.add_gate(attempt, r)
        failed = results[-1] if not results[-1].passed else None
        if failed is None:
            store.accept(cand, attempt)  # the row first: a kill after this rewrites the folder on resume
            publish(cand, store.out, env.config.env)
            write_jsonl(store)
            store.finish_attempt(attempt, time.monotonic() - started)
            env.emit("box_done", candidate=candidate_id, accepted=True)
            return True
        last = f"{failed.gate}: {failed.code}: {failed.message}"
        if failed.fault == "infra":
            store.finish_attempt(attempt, time.monotonic() - started)
            store.interrupt(candidate_id, f"infra: {last}")
            env.emit("box_done", candidate=candidate_id, accepted=False)
            return False
        # the critic is advisory: down past its pauses, the gate's own hint stands in
        reply = await _with_pauses(
            env, "critic", lambda: ask_critic(env.clients["critic"], card_view, body, failed, settings.prompts)
        )
        diagnosis: Diagnosis = read_diagnosis(reply, failed)
        store.add_diagnosis(attempt, diagnosis)
        if n < settings.max_repairs:
            fixed = await _with_pauses(
                env,
                "repair",
                lambda: repair(env.clients["generator"], card_view, body, diagnosis, failed, settings.prompts),
            )
            store.add_repair(attempt, diagnosis.components, fixed.body is not None, fixed.error)
            if fixed.endpoint_failed:  # an outage, not a verdict: the box stops without blaming the candidate
                store.finish_attempt(attempt, time.monotonic() - started)
                store.interrupt(candidate_id, f"infra: repair {fixed.error}"[:2000])
                env.emit("box_done", candidate=candidate_id, accepted=False)
                return False
            if fixed.body is not None:
                body, repair_raw = fixed.body, fixed.raw
            # a repair reply that does not parse leaves the candidate as it was: the next attempt
            # fails the same gate and the critic is asked again
        store.finish_attempt(attempt, time.monotonic() - started)
    store.reject(candidate_id, last)
    env.emit("box_done", candidate=candidate_id, accepted=False)
    return False
