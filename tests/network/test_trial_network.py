"""A task whose solution needs the network, through `agentmill check` as a user runs it: the oracle
gets the internet when the task allows it and the user does, never otherwise, and the verifier never.

The solution `pip install`s a small PyPI package at run time; the test script fails the trial if the
verifier itself can resolve a name, so an oracle at reward 1 shows both halves at once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from agentmill.tasks.model import EnvironmentSection, TaskConfig
from tests.conftest import REWARD_IF, simple_task
from tests.network.helpers import internet_tools

pytestmark = internet_tools

SOLVE = "python3 -m pip install --no-deps --no-cache-dir --retries 1 --timeout 20 --target /app/lib six==1.16.0\n"
TEST = (
    "#!/bin/bash\n"
    "if python3 -c \"import socket; socket.getaddrinfo('pypi.org', 443)\" 2>/dev/null; then\n"
    "  echo 'the verifier has a network'; echo 0 > /logs/verifier/reward.txt; exit 0\n"
    "fi\n" + REWARD_IF.format(cond="test -f /app/lib/six.py && test -d /app/lib/six-1.16.0.dist-info").split("\n", 1)[1]
)


def _task(root: Path, name: str, allow: bool) -> None:
    config = TaskConfig(environment=EnvironmentSection(allow_internet=allow))
    simple_task(root, name, solve_sh=SOLVE, test_sh=TEST, config=config)


def _check(data: Path, tmp: Path, *network: str) -> dict:
    out = tmp / f"check{'-'.join(network)}.json"
    r = subprocess.run(
        [sys.executable, "-m", "agentmill.cli", "check", str(data), "--json", str(out), *network],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.exists(), r.stdout + r.stderr
    return {row["task"]: row for row in json.loads(out.read_text())}


def test_a_solution_that_needs_the_network_runs_where_the_task_allows_it(tmp_path):
    data = tmp_path / "ds"
    _task(data, "needs-network", allow=True)
    _task(data, "offline-task", allow=False)  # the same solution; the task does not allow the internet
    rows = _check(data, tmp_path)  # --network task, the default
    ok = rows["needs-network"]
    assert ok["verdict"] == "ok", ok["reason"]
    assert ok["oracle"]["reward"] == 1.0 and ok["oracle"]["internet"] is True  # and the verifier had none
    assert ok["nop"]["reward"] == 0.0
    recorded = json.loads(Path(ok["oracle"]["trial_dir"], "result.json").read_text())
    assert recorded["internet"] is True
    denied = rows["offline-task"]
    assert denied["verdict"] == "unsolvable" and denied["oracle"]["internet"] is False
    assert "the task does not allow it: set allow_internet = true" in denied["reason"], denied["reason"]


def test_network_none_overrides_a_task_that_allows_it(tmp_path):
    data = tmp_path / "ds"
    _task(data, "needs-network", allow=True)
    row = _check(data, tmp_path, "--network", "none")["needs-network"]
    assert row["verdict"] == "unsolvable" and row["oracle"]["internet"] is False
    assert row["reason"].startswith("the solution needs the network and this check ran with --network none"), row[
        "reason"
    ]


def test_network_all_gives_the_internet_to_a_task_that_does_not_say(tmp_path):
    """Legacy Terminal-Bench tasks (task.yaml) cannot say allow_internet; their solutions assume
    Docker's network-on default. `--network all` runs them as written (planted: 'all' treated as
    'task', the oracle offline; caught). The verifier still has none (the test script checks)."""
    data = tmp_path / "ds"
    _task(data, "offline-task", allow=False)
    row = _check(data, tmp_path, "--network", "all")["offline-task"]
    assert row["verdict"] == "ok", row["reason"]
    assert row["oracle"]["internet"] is True and row["oracle"]["reward"] == 1.0


def test_an_unknown_network_mode_is_refused(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "agentmill.cli", "check", str(tmp_path), "--network", "host"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "--network: 'host' is not one of task, none" in r.stdout + r.stderr


def test_a_rollout_records_its_network_and_a_resume_may_not_change_it(tmp_path):
    data = tmp_path / "ds"
    _task(data, "needs-network", allow=True)
    out = tmp_path / "run"

    def rollout(*network: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "agentmill.cli",
                "rollout",
                str(data),
                "--agent",
                "oracle",
                "--out",
                str(out),
                "--no-store",
                *network,
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )

    r = rollout()
    [trial] = list((out / "trials").iterdir())
    result, record = (json.loads((trial / f).read_text()) for f in ("result.json", "trial.json"))
    assert result["internet"] is True and result["reward"] == 1.0, r.stdout + r.stderr
    assert record["internet"] is True and record["network"] == "task"
    assert json.loads((out / "config.json").read_text())["network"] == "task"
    refused = rollout("--network", "none")
    assert refused.returncode != 0 and "network: 'task' -> 'none'" in refused.stdout + refused.stderr


def test_augments_oracle_check_gives_the_oracle_the_internet_its_task_allows(tmp_path):
    """A rewrite of a task whose solution needs the network is kept: the augment stage's oracle runs
    as the task's rollout will, online where the task allows it (planted: the oracle offline, as
    before; the rewrite was dropped with 'oracle no longer passes'). Its twin: the same task without
    allow_internet is dropped, so the check still fails a solution that cannot run."""
    import asyncio

    from agentmill.images import ImageBuilder
    from agentmill.models.client import ModelClient
    from agentmill.recipe.llm_cache import CachedModel
    from agentmill.recipe.records import TaskEntry
    from agentmill.recipe.schema import Augment
    from agentmill.recipe.stages.augment import augment_tasks
    from agentmill.tasks import load_task
    from tests.helpers.chat_server import ChatServer, Reply

    data = tmp_path / "ds"
    _task(data, "needs-network", allow=True)
    _task(data, "offline-task", allow=False)
    entries = []
    for name in ("needs-network", "offline-task"):
        t = load_task(data / name)
        entries.append(
            TaskEntry(
                name=name, path=str(data / name), source="s", content_hash=t.content_hash, instruction=t.instruction
            )
        )
    rewrite = "Please install the PyPI package six at version 1.16.0 into /app/lib, so it can be imported from there."
    spec = Augment(strategies=["rewrite"], keep_original=False, check_anchors=False, judge=False)

    async def go(url: str):
        client = ModelClient(base_url=url, model="m", max_retries=0)
        try:
            model = CachedModel(client, tmp_path / "llm.sqlite")
            return await augment_tasks(entries, spec, model, tmp_path / "aug", builder=ImageBuilder(), prompts_dir=None)
        finally:
            await client.close()

    with ChatServer(lambda request: Reply(rewrite)) as srv:
        kept, report = asyncio.run(go(srv.base_url))
    assert [e.name for e in kept] == ["needs-network~rewrite0"], report.dropped
    [dropped] = [d for d in report.dropped if "~" in d.name]  # the originals are replaced by design
    assert dropped.name == "offline-task~rewrite0" and "oracle no longer passes" in dropped.reason
