"""Tasks written the way public Terminal-Bench / Harbor tasks are written run as written.

Each test is one class of public task that used to fail: RUN steps writing under WORKDIR, the
WORKDIR and TEST_DIR that Terminal-Bench's base images and harness provide, the recording-only
packages of Terminal-Bench's boilerplate, and legacy tasks that rely on the default test runner.
The fixtures are written here in the public format (task.yaml, Dockerfile, solution.sh,
run-tests.sh, tests/test_outputs.py); the oracle must pass and nop must fail.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentmill.agents import NopAgent, OracleAgent
from agentmill.errors import NeedsContainerError, TaskError
from agentmill.images import ImageBuilder
from agentmill.rollout.trial import run_trial
from agentmill.tasks import load_task
from agentmill.verify.outcome import Outcome
from tests.conftest import sandbox, scratch_cache

pytestmark = sandbox

TB_RUN_TESTS = """#!/bin/bash
# Like Terminal-Bench's boilerplate: refuse to run without a WORKDIR, then pytest the outputs.
if [ "$PWD" = "/" ]; then
    echo "Error: No working directory set. Please set a WORKDIR in your Dockerfile before running this script."
    exit 1
fi
pytest $TEST_DIR/test_outputs.py -rA
"""


def tb_task(
    root: Path,
    name: str,
    *,
    instruction: str,
    dockerfile: str,
    solution: str,
    test_outputs: str,
    run_tests: str | None = TB_RUN_TESTS,
    files: dict[str, str] | None = None,
) -> Path:
    task = root / name
    (task / "tests").mkdir(parents=True)
    (task / "task.yaml").write_text(
        "instruction: |-\n"
        + "".join(f"  {line}\n" for line in instruction.splitlines())
        + "author_name: agentmill tests\ndifficulty: easy\ncategory: file-operations\ntags:\n  - public-style\n"
        "parser_name: pytest\nmax_agent_timeout_sec: 120\nmax_test_timeout_sec: 60\nrun_tests_in_same_shell: false\n"
    )
    (task / "Dockerfile").write_text(dockerfile)
    (task / "solution.sh").write_text("#!/bin/bash\n" + solution)
    (task / "tests" / "test_outputs.py").write_text(test_outputs)
    if run_tests is not None:
        (task / "run-tests.sh").write_text(run_tests)
    for rel, text in (files or {}).items():
        (task / rel).parent.mkdir(parents=True, exist_ok=True)
        (task / rel).write_text(text)
    return task


def oracle_and_nop(path: Path, tmp_path: Path):
    task = load_task(path)
    builder = ImageBuilder(cache=scratch_cache(tmp_path))

    async def both():
        return await asyncio.gather(run_trial(task, OracleAgent(), builder), run_trial(task, NopAgent(), builder))

    return asyncio.run(asyncio.wait_for(both(), 300))


def assert_ok(oracle, nop):
    assert oracle.outcome is Outcome.PASSED, (
        oracle.exception,
        oracle.verifier_stdout[-2000:],
        oracle.verifier_stderr[-2000:],
    )
    assert nop.outcome is Outcome.FAILED and nop.reward == 0.0, (nop.outcome, nop.exception)


def test_run_steps_create_dirs_and_files_under_workdir(tmp_path):
    # The usual order: packages first (the build sandbox starts there), then WORKDIR, then RUN steps
    # and COPYs that write beneath it.
    df = (
        "FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\n\n"
        "RUN apt-get update && apt-get install -y curl && rm -rf /var/lib/apt/lists/*\n\n"
        "WORKDIR /app\n"
        "RUN mkdir -p /app/data/raw && printf 'id,score\\n1,10\\n2,32\\n' > /app/data/raw/scores.csv\n"
        "COPY config/settings.ini /app/conf/settings.ini\n"
        "RUN echo 'threshold = 20' >> /app/conf/settings.ini && touch /app/conf/.built\n"
    )
    path = tb_task(
        tmp_path,
        "score-filter",
        dockerfile=df,
        files={"config/settings.ini": "[filter]\n"},
        instruction="Read the threshold from /app/conf/settings.ini and write the ids from\n"
        "/app/data/raw/scores.csv whose score is above it, one per line, to /app/data/above.txt.",
        solution="awk -F, 'NR>1 && $2>20 {print $1}' data/raw/scores.csv > data/above.txt\n",
        test_outputs="from pathlib import Path\n\n\ndef test_above():\n"
        "    assert Path('/app/data/above.txt').read_text().split() == ['2']\n\n\n"
        "def test_config_built():\n    assert 'threshold = 20' in Path('/app/conf/settings.ini').read_text()\n",
    )
    assert_ok(*oracle_and_nop(path, tmp_path))


@pytest.mark.parametrize(
    "base",
    ["ghcr.io/laude-institute/t-bench/python-3-13:20250620", "ghcr.io/laude-institute/t-bench/ubuntu-24-04:latest"],
)
def test_tbench_base_image_workdir_and_test_dir(tmp_path, base):
    # No WORKDIR in the task's Dockerfile: Terminal-Bench's base image sets /app, and the
    # boilerplate run-tests.sh refuses to run from / and finds the tests through $TEST_DIR.
    path = tb_task(
        tmp_path,
        "greeting",
        dockerfile=f"FROM {base}\n\nRUN apt-get update && apt-get install -y tmux\n",
        instruction="Create greeting.txt in the working directory containing the word hi.",
        solution="echo hi > greeting.txt\n",
        test_outputs="import os\nfrom pathlib import Path\n\n\ndef test_greeting():\n"
        "    assert os.environ['TEST_DIR'] == '/tests'\n"
        "    assert Path('/app/greeting.txt').read_text().strip() == 'hi'\n",
    )
    oracle, nop = oracle_and_nop(path, tmp_path)
    assert_ok(oracle, nop)
    assert "No working directory set" not in oracle.verifier_stdout


def test_recording_only_packages_are_noted_not_fatal(tmp_path):
    df = (
        "FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\n\n"
        "RUN apt-get update && apt-get install -y \\\n    tmux asciinema \\\n    && rm -rf /var/lib/apt/lists/*\n\n"
        "WORKDIR /app\nCOPY notes.txt ./\n"
    )
    path = tb_task(
        tmp_path,
        "count-lines",
        dockerfile=df,
        files={"notes.txt": "a\nb\nc\n"},
        instruction="Write the number of lines of /app/notes.txt into /app/count.txt.",
        solution="wc -l < notes.txt > count.txt\n",
        test_outputs="from pathlib import Path\n\n\ndef test_count():\n"
        "    assert Path('/app/count.txt').read_text().strip() == '3'\n",
    )
    oracle, nop = oracle_and_nop(path, tmp_path)
    assert_ok(oracle, nop)
    assert any("recording-only package 'asciinema'" in n for n in oracle.notes), oracle.notes


def test_a_real_missing_package_beside_asciinema_still_needs_a_container(tmp_path):
    df = (
        "FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\n"
        "RUN apt-get update && apt-get install -y tmux asciinema definitely-not-a-package-xyz\n"
    )
    path = tb_task(
        tmp_path,
        "missing-pkg",
        dockerfile=df,
        instruction="Do nothing.",
        solution="true\n",
        test_outputs="def test_x():\n    assert False\n",
    )
    task = load_task(path)
    with pytest.raises(NeedsContainerError, match="definitely-not-a-package-xyz") as err:
        asyncio.run(ImageBuilder(cache=scratch_cache(tmp_path)).get(task))
    assert "asciinema" not in str(err.value)


def test_legacy_task_without_run_tests_uses_the_default_runner(tmp_path):
    path = tb_task(
        tmp_path,
        "sum-file",
        run_tests=None,
        dockerfile="FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\nWORKDIR /app\n"
        "RUN printf '3\\n4\\n5\\n' > numbers.txt\n",
        instruction="Write the sum of the numbers in /app/numbers.txt to /app/sum.txt.",
        solution="paste -sd+ numbers.txt | bc > sum.txt 2>/dev/null || python3 -c \"print(sum(int(x) for x in open('numbers.txt')))\" > sum.txt\n",
        test_outputs="from pathlib import Path\n\n\ndef test_sum():\n"
        "    assert Path('/app/sum.txt').read_text().strip() == '12'\n",
    )
    task = load_task(path)
    assert task.test_script == "run-tests.sh"
    assert any("default runner" in w for w in task.warnings)
    oracle, nop = oracle_and_nop(path, tmp_path)
    assert_ok(oracle, nop)
    assert "test_sum" in oracle.verifier_stdout  # pytest -rA ran the task's own tests


def test_legacy_task_without_any_tests_is_reported(tmp_path):
    path = tb_task(
        tmp_path,
        "no-tests",
        run_tests=None,
        dockerfile="FROM debian:bookworm\n",
        instruction="x",
        solution="true\n",
        test_outputs="",
    )
    (path / "tests" / "test_outputs.py").unlink()
    with pytest.raises(TaskError, match="run-tests.sh: missing, and no tests/test_outputs.py"):
        load_task(path)
