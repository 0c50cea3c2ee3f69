"""Issue 31's classes of public task, each run through `agentmill check` as a user runs it (a real
subprocess, real builds, real sandboxes): test dependencies installed by run-tests.sh, a test
dependency that does not exist, a Dockerfile that adds a user (a real Debian image, merged-/usr),
COPY from the build context and from the task root. Trials run over overlays, as big images do:
an untouched overlay is the image's own, never tamper evidence."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentmill.agents import NopAgent, OracleAgent
from agentmill.images import ImageBuilder
from agentmill.images.trial_fs import overlay_available
from agentmill.rollout.trial import run_trial
from agentmill.tasks import load_task, write_task
from agentmill.verify.outcome import Outcome
from tests.conftest import sandbox, scratch_cache
from tests.tasks.public_corpus import write_corpus

pytestmark = [sandbox, pytest.mark.skipif(not overlay_available(), reason="fuse-overlayfs not usable")]


def _debian_builder() -> str | None:
    from agentmill.images.userns import BuilderUnavailable, build_identity

    try:
        build_identity()
    except BuilderUnavailable as e:
        return str(e)
    return None


@pytest.mark.skipif(_debian_builder() is not None, reason="the Debian image builder is unavailable")
def test_the_corpus_through_agentmill_check(tmp_path):
    expected = write_corpus(tmp_path / "corpus")
    out, trials = tmp_path / "check.json", tmp_path / "trials"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentmill.cli",
            "check",
            str(tmp_path / "corpus"),
            "--json",
            str(out),
            "--trials",
            str(trials),
            "-c",
            "3",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "AGENTMILL_OVERLAY": "1", "AGENTMILL_IMAGES": "auto"},
    )
    rows = {row["task"]: row for row in json.loads(out.read_text())}
    assert {t: r["verdict"] for t, r in rows.items()} == expected, run.stdout[-4000:] + run.stderr[-2000:]
    assert f"trial records (result.json, verifier/stdout.txt): {trials}" in " ".join(run.stdout.split())
    for row in rows.values():  # no false tamper evidence over an untouched overlay (merged-/usr root links)
        assert "tamper" not in row["nop"], row
    venv = rows["legacy-venv-deps"]
    assert "2 passed" in venv["oracle"]["verifier_tail"]  # the pinned versions, imported in the script's venv
    kept = Path(venv["oracle"]["trial_dir"])
    assert json.loads((kept / "result.json").read_text())["outcome"] == "passed"
    assert "2 passed" in (kept / "verifier" / "stdout.txt").read_text()
    assert "2 passed" in rows["legacy-pip-install"]["oracle"]["verifier_tail"]  # pip offline, the image's python
    missing = rows["legacy-deps-unresolvable"]
    assert "agentmill-no-such-package-31==1.0" in missing["reason"]
    assert "No module named 'agentmill_no_such_package_31'" in missing["reason"]  # the oracle's own cause
    assert (
        "not found" in missing["oracle"]["verifier_tail"]
        or "could not be resolved" in missing["oracle"]["verifier_tail"]
    )
    outside = rows["harbor-copy-task-root"]
    assert "it is at the task root" in outside["reason"] and "Harbor builds with environment/" in outside["reason"]
    offline = rows["harbor-solution-needs-network"]  # no agent network: the solution's own error is the cause
    assert "the solution exited 6 (curl: (6) Could not resolve host: pypi.org)" in offline["reason"], offline["reason"]
    assert offline["oracle"]["solution"]["exit_code"] == 6
    adduser = rows["harbor-adduser"]
    assert "Debian layers" in adduser.get("image", "")  # a real image from Debian's archive (merged-/usr)


def test_an_agent_that_removes_bin_over_an_overlay_is_caught(tmp_path):
    # The attack twin of the corpus's clean overlays: `rm /bin` leaves a whiteout in the upper; the
    # verifier restores the image's link and withholds the reward (planted: whiteouts ignored, caught).
    root = write_task(
        tmp_path / "rm-bin",
        instruction="Write hello into /app/out.txt.",
        test_sh="#!/usr/bin/bash\nif grep -qx hello /app/out.txt; then echo 1 > /logs/verifier/reward.txt; "
        "else echo 0 > /logs/verifier/reward.txt; fi\n",
        solve_sh="echo hello > /app/out.txt\nrm /bin /sbin\n",
    )
    task = load_task(root)
    builder = ImageBuilder(cache=scratch_cache(tmp_path), overlay=True)
    result = asyncio.run(run_trial(task, OracleAgent(), builder))
    kinds = {(e.kind.value, e.path) for e in result.tamper}
    assert {("root_layout", "/bin"), ("root_layout", "/sbin")} <= kinds, (result.tamper, result.verifier_stderr[-1000:])
    assert result.outcome is Outcome.FAILED and result.reward == 0.0
    nop = asyncio.run(run_trial(task, NopAgent(), builder))  # the honest twin: nothing touched, nothing found
    assert nop.tamper == [] and nop.outcome is Outcome.FAILED


def test_a_venv_the_agent_prepared_is_replaced_by_the_scripts_own(tmp_path):
    # The test script activates `.tbench-testing` and then runs `uv run pytest`: an agent that made
    # that venv first, with its own bin/uv that exits 0 (Terminal-Bench's verdict is the exit
    # status), would pass without the work. `uv venv` replaces it, as uv does (planted: no --clear,
    # caught); the honest twin is the corpus's legacy-venv-deps.
    from tests.tasks.public_corpus import TB_RUN_TESTS, TOML_TEST, tb_task

    cheat = (
        "#!/bin/bash\nmkdir -p /app/.tbench-testing/bin\n"
        "printf '#!/bin/bash\\nexit 0\\n' > /app/.tbench-testing/bin/uv\nchmod +x /app/.tbench-testing/bin/uv\n"
    )
    root = tb_task(
        tmp_path,
        "planted-venv",
        instruction="Write /app/config.toml.",
        dockerfile="FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\nWORKDIR /app\n",
        solution=cheat,
        test_outputs=TOML_TEST,
        run_tests=TB_RUN_TESTS.format(packages="pytest==8.4.1 tomli-w==1.0.0"),
    )
    result = asyncio.run(run_trial(load_task(root), OracleAgent(), ImageBuilder(cache=scratch_cache(tmp_path))))
    assert result.outcome is Outcome.FAILED and result.reward == 0.0, (result.outcome, result.verifier_stdout[-1500:])
    assert "config.toml" in result.verifier_stdout  # the real tests ran, and failed
