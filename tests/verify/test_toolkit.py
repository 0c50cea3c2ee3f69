"""A task written for containers (pip at build time, uv + pytest fetched by the test script) runs
here: build steps reach the package registry, the verifier gets the offline toolkit."""

import asyncio

from agentmill.agents import NopAgent, OracleAgent
from agentmill.images import ImageBuilder
from agentmill.rollout import run_trial
from agentmill.tasks import load_task, write_task
from agentmill.verify import Outcome
from tests.conftest import sandbox, scratch_cache

pytestmark = sandbox

DOCKERFILE = """FROM python:3.13-slim-bookworm
RUN apt-get update && apt-get install -y --no-install-recommends git && rm -rf /var/lib/apt/lists/*
RUN pip install --no-cache-dir six==1.16.0
WORKDIR /app
"""

TEST_SH = """#!/bin/bash
set -euo pipefail
apt-get update
apt-get install -y curl
curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh
source $HOME/.local/bin/env
set +e
uvx -p 3.13 -w pytest==8.4.1 -w pytest-json-ctrf==0.3.5 pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""

TEST_OUTPUTS = """import six
from pathlib import Path

def test_six_is_importable_from_the_image():
    assert six.__version__ == "1.16.0"

def test_answer_written():
    assert Path("/app/answer.txt").read_text().strip() == "42"
"""


def test_container_era_task_runs_offline(tmp_path):
    root = write_task(
        tmp_path / "legacy-style",
        instruction="Write 42 to /app/answer.txt.",
        dockerfile=DOCKERFILE,
        test_sh=TEST_SH,
        test_files={"test_outputs.py": TEST_OUTPUTS},
        solve_sh="echo 42 > /app/answer.txt\n",
    )
    task = load_task(root)
    builder = ImageBuilder(cache=scratch_cache(tmp_path))
    oracle = asyncio.run(run_trial(task, OracleAgent(), builder))
    nop = asyncio.run(run_trial(task, NopAgent(), builder))
    assert oracle.outcome is Outcome.PASSED, (
        oracle.exception,
        oracle.verifier_stdout[-2000:],
        oracle.verifier_stderr[-2000:],
    )
    assert "2 passed" in oracle.verifier_stdout
    assert nop.outcome is Outcome.FAILED and "1 failed" in nop.verifier_stdout
    assert any("3.13" in n for n in oracle.notes)  # the Python version gap is reported, not hidden


IMAGE_PYTEST_DOCKERFILE = "FROM python:3.11-slim-bookworm\nRUN pip install --no-cache-dir pytest==8.3.4\nWORKDIR /app\n"
IMAGE_PYTEST_TEST_SH = """#!/bin/bash
cd /app
python3 -m pytest /tests/test_outputs.py -rA
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""
FORCE_PASS = """import pytest
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
"""


def test_image_pytest_is_pinned_too(tmp_path, monkeypatch):
    """`python3 -m pytest` with the image's own pytest (not the toolkit's shim) runs under the
    verifier's pinned options and guard: a planted /conftest.py + /pytest.ini does not steer it even
    with the pre-verification pass switched off, and the guard's evidence is recorded."""
    import agentmill.verify.test_script as ts
    from tests.verify.test_reward_hacks import ShellAgent

    root = write_task(
        tmp_path / "image-pytest",
        instruction="Write 42 to /app/answer.txt.",
        dockerfile=IMAGE_PYTEST_DOCKERFILE,
        test_sh=IMAGE_PYTEST_TEST_SH,
        test_files={
            "test_outputs.py": TEST_OUTPUTS.split("def test_six")[0]
            + "def test_answer_written():\n    assert Path('/app/answer.txt').read_text().strip() == '42'\n"
        },
        solve_sh="echo 42 > /app/answer.txt\n",
    )
    task = load_task(root)
    builder = ImageBuilder(cache=scratch_cache(tmp_path))
    honest = asyncio.run(run_trial(task, OracleAgent(), builder))
    assert honest.outcome is Outcome.PASSED and honest.tamper == [], (
        honest.verifier_stdout[-2000:],
        honest.verifier_stderr[-2000:],
    )
    assert "pytest-8.3.4" in honest.verifier_stdout  # the image's pytest, not the toolkit's

    attack = (
        "printf '[pytest]\\n' > /pytest.ini && cat > /conftest.py <<'EOF'\n" + FORCE_PASS + "EOF\n"
        "mkdir -p /app/evil && cat > /app/evil/__init__.py <<'EOF'\n" + FORCE_PASS + "EOF\n"
    )
    hacked = asyncio.run(run_trial(task, ShellAgent(attack), builder))
    assert hacked.outcome is Outcome.FAILED and {t.kind.value for t in hacked.tamper} == {"runner_config"}
    monkeypatch.setattr(ts, "harden", lambda *a, **k: [])
    unvetted = asyncio.run(run_trial(task, ShellAgent(attack), builder))
    assert unvetted.outcome is Outcome.FAILED and not unvetted.reward, unvetted.verifier_stdout[-2000:]
