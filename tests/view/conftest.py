"""Real runs for the viewer's tests: the oracle over bundled sample tasks, a failing task, a task whose
output is hostile markup, and one that tampers with the verifier; all through `agentmill rollout`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentmill.tasks import write_task
from agentmill.tasks.dataset import sample_dataset_path
from tests.conftest import REWARD_IF, needs_sandbox
from tests.view.cdp import CHROMIUM, Browser

SAMPLE_TASKS = ("csv-revenue-by-region", "dedupe-photos")
# What an agent could print: markup that would run or inject elements if the page ever parsed it.
XSS = (
    '<script>window.__pwned = 1</script><img src=x id=pwned-img onerror="window.__pwned = 2">'
    '<b id=pwned-bold>bold</b></pre><iframe id=pwned-frame src="javascript:window.__pwned=3"></iframe>'
)


def rollout(dataset: Path, out: Path, *args: str) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "agentmill.cli", "rollout", str(dataset), "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]


def hostile_dataset(root: Path) -> Path:
    """Two bundled sample tasks, one task whose solution is wrong, one whose output is hostile markup,
    and one whose solution plants a conftest.py for the verifier to neutralise."""
    for name in SAMPLE_TASKS:
        shutil.copytree(sample_dataset_path() / name, root / name)
    check = REWARD_IF.format(cond="grep -qx hello /app/out.txt")
    write_task(
        root / "wrong-answer",
        instruction="Write the word hello into /app/out.txt.",
        test_sh=check,
        solve_sh="echo goodbye > /app/out.txt\n",
    )
    write_task(
        root / "hostile-output",
        instruction=f"Print this, then write hello into /app/out.txt: {XSS}",
        test_sh=f"#!/bin/bash\ncat <<'EOF'\n{XSS}\nEOF\n" + check.split("\n", 1)[1],
        solve_sh=f"cat <<'EOF'\n{XSS}\nEOF\necho hello > /app/out.txt\n",
    )
    write_task(
        root / "plants-conftest",
        instruction="Write the word hello into /app/out.txt.",
        test_sh="#!/bin/bash\ncd /app\n" + check.split("\n", 1)[1],
        solve_sh="echo 'import os' > /app/conftest.py\nprintf '[pytest]\\naddopts = -p no:x\\n' > /app/pytest.ini\n"
        "echo hello > /app/out.txt\n",
    )
    return root


@pytest.fixture(scope="session")
def real_run(tmp_path_factory) -> Path:
    """An oracle rollout, two attempts per task, made through the CLI."""
    if not needs_sandbox():
        pytest.skip("bubblewrap not installed")
    base = tmp_path_factory.mktemp("view-run")
    data = hostile_dataset(base / "tasks")
    rollout(data, base / "run", "--agent", "oracle", "--attempts", "2", "-c", "2")
    return base / "run"


@pytest.fixture(scope="session")
def nop_run(tmp_path_factory) -> Path:
    """The nop agent over two bundled sample tasks (every trial fails)."""
    if not needs_sandbox():
        pytest.skip("bubblewrap not installed")
    base = tmp_path_factory.mktemp("view-nop")
    args = [a for name in SAMPLE_TASKS for a in ("--task", name)]
    rollout(sample_dataset_path(), base / "run", "--agent", "nop", *args)
    return base / "run"


needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install chromium)")


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip("chromium not installed")
    b = Browser(tmp_path_factory.mktemp("chromium-profile"))
    yield b
    b.close()


@pytest.fixture(scope="session")
def tools_run(tmp_path_factory) -> Path:
    """The oracle replaying a bundled tool task's reference calls (function calling, `role: tool` results)."""
    if not needs_sandbox():
        pytest.skip("bubblewrap not installed")
    out = tmp_path_factory.mktemp("view-tools") / "run"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentmill.cli",
            "rollout",
            "--sample-tools",
            "--agent",
            "oracle",
            "--task",
            "itsm-hold-for-vendor",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return out
