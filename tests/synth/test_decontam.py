"""Leakage into evaluation: accepted samples are checked against the diagnosis tasks and named benchmark
folders with the recipe's decontamination filter. A candidate that copies an evaluation request is
refused by the contamination gate; `synth decontaminate` names a planted overlap in an output folder;
files every task of a gym shares (the gym, the system prompt) are no overlap."""

from __future__ import annotations

import asyncio
import json
from contextlib import ExitStack
from types import SimpleNamespace

from typer.testing import CliRunner

from agentmill.cli import app
from agentmill.synth.candidate import Candidate, CandidateBody, GymSet, write_task_folder
from agentmill.synth.config import load_config
from agentmill.synth.decontam import eval_sets
from agentmill.synth.gates.contamination import ContaminationGate
from agentmill.synth.output import publish
from agentmill.synth.store import SynthStore
from agentmill.tasks.tool_task import load_tool_task
from tests.conftest import sandbox
from tests.synth.scripted import GOOD, GYM, _body, card_line, config_text, role_servers

ENV = GymSet(gym_dir=GYM)
# an evaluation task that asks what the 'good' sample asks, in the same words (the planted overlap)
LEAKED = {
    **GOOD,
    "prompt": "Ticket 10 (Wi-Fi drops in room 4) is fixed: we replaced the access point. Please close it with a note.",
}
# an evaluation task on the same gym, same system prompt, another request: no overlap
UNRELATED = _body("eval", 60, "Laptop battery swells", "battery pack")
UNRELATED["prompt"] = "Our Lisbon office reports the laptop battery pack in ticket 60 swelled; raise it to priority 1."


def _bench(root, tasks: dict[str, dict]):
    for name, body in tasks.items():
        write_task_folder(
            Candidate(candidate_id=name, card_id="eval", body=CandidateBody.model_validate(body)), root / name, ENV
        )
    return root


def _task(tmp_path, body: dict, name="synth-task"):
    return load_tool_task(
        write_task_folder(
            Candidate(candidate_id=name, card_id="c", body=CandidateBody.model_validate(body)),
            tmp_path / "cand" / name,
            ENV,
        )
    )


def test_the_gate_refuses_a_copied_request_and_not_a_task_that_only_shares_the_gym(tmp_path):
    bench = _bench(tmp_path / "bench", {"eval-wifi": LEAKED, "eval-battery": UNRELATED})
    gate = ContaminationGate([str(bench)])
    r = asyncio.run(gate.run(SimpleNamespace(task=_task(tmp_path, GOOD))))
    assert (r.passed, r.code) == (False, "eval_overlap") and "eval-wifi" in r.message
    other = _body("good", 27, "Printer jams on tray 2", "roller")
    assert asyncio.run(gate.run(SimpleNamespace(task=_task(tmp_path, other, "other")))).passed
    # no benchmarks: nothing to compare, the gate passes
    assert asyncio.run(ContaminationGate([]).run(SimpleNamespace(task=_task(tmp_path, GOOD, "g2")))).passed


def test_the_diagnosis_tasks_are_always_an_evaluation_set(tmp_path):
    (tmp_path / "eval").mkdir()
    (tmp_path / "bench").mkdir()
    (tmp_path / "synth.toml").write_text(
        '[synth]\nbenchmarks = ["bench"]\n[env]\ngyms = ["itsm"]\n[diagnosis]\ntasks = "eval"\ntarget_run = "t"\n'
        'teacher_run = "s"\n'
        + "".join(
            f'[roles.{r}]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
            for r in ("generator", "critic", "judge", "target", "solver", "card_writer", "teacher")
        )
    )
    assert eval_sets(load_config(tmp_path / "synth.toml")) == [str(tmp_path / "eval"), str(tmp_path / "bench")]
    (tmp_path / "bench").rmdir()
    import pytest

    from agentmill.errors import AgentmillError

    with pytest.raises(AgentmillError, match="synth.benchmarks.*no such folder"):
        load_config(tmp_path / "synth.toml")


def test_decontaminate_names_the_planted_overlap_in_an_output_folder(tmp_path):
    out = tmp_path / "synth-out"
    SynthStore(out).close()
    for cid, body in (
        ("card-good-s0000", GOOD),
        ("card-good-s0001", _body("good", 27, "Printer jams on tray 2", "roller")),
    ):
        publish(Candidate(candidate_id=cid, card_id="card-good", body=CandidateBody.model_validate(body)), out, ENV)
    bench = _bench(tmp_path / "bench", {"eval-wifi": LEAKED, "eval-battery": UNRELATED})
    result = CliRunner().invoke(app, ["synth", "decontaminate", str(out), "--benchmark", str(bench)])
    assert result.exit_code == 1, result.output
    report = json.loads((out / "contamination.json").read_text())
    assert list(report["overlaps"]) == ["card-good-s0000"] and "eval-wifi" in report["overlaps"]["card-good-s0000"]
    assert report["checked"] == 2 and report["benchmark_tasks"] == 2
    assert "card-good-s0000" in result.output and "eval-wifi" in result.output
    clean = _bench(tmp_path / "clean", {"eval-battery": UNRELATED})
    result = CliRunner().invoke(app, ["synth", "decontaminate", str(out), "--benchmark", str(clean)])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "contamination.json").read_text())["overlaps"] == {}


@sandbox
def test_a_run_with_a_benchmark_never_accepts_the_leaking_candidate(tmp_path):
    bench = _bench(tmp_path / "bench", {"eval-wifi": LEAKED})
    cards = tmp_path / "cards.jsonl"
    cards.write_text(card_line("good") + "\n")
    with ExitStack() as stack:
        servers = {r: stack.enter_context(s) for r, s in role_servers().items()}
        text = config_text(servers, cards, max_slots=1, benchmarks=[str(bench)])
        (tmp_path / "synth.toml").write_text(text)
        result = CliRunner().invoke(
            app, ["synth", "run", str(tmp_path / "synth.toml"), "--out", str(tmp_path / "out"), "--no-report"]
        )
        target_requests = len(servers["target"].requests)
    assert result.exit_code == 0, result.output
    store = SynthStore.open_existing(tmp_path / "out")
    codes = [(r["gate"], r["code"]) for r in store.rows("SELECT gate, code FROM gate_results WHERE passed = 0")]
    assert codes == [("contamination", "eval_overlap")] * 2  # the first attempt and the repair's
    assert store.accepted() == [] and target_requests == 0  # refused before any sandbox or ballot
