"""A corpus of tasks written as public Terminal-Bench and Harbor tasks are written, one per class
that `agentmill check` used to call not ok (issue 31): a legacy task whose run-tests.sh makes a venv
and installs a non-pytest dependency at a pinned version, one whose test dependency does not exist,
a Dockerfile that adds a user, a COPY from the build context and one from outside it (the task root),
and a solution that needs the network.
"""

from __future__ import annotations

from pathlib import Path

from agentmill.tasks import write_task

TB_TASK_YAML = (
    "instruction: |-\n  {instruction}\nauthor_name: agentmill tests\ndifficulty: easy\n"
    "category: file-operations\nparser_name: pytest\nmax_agent_timeout_sec: 120\nmax_test_timeout_sec: 120\n"
)
# Terminal-Bench's run-tests.sh as public tasks ship it, with a non-pytest dependency.
TB_RUN_TESTS = """#!/bin/bash
apt-get update
apt-get install -y curl
curl -LsSf https://astral.sh/uv/0.7.13/install.sh | sh
source $HOME/.local/bin/env
if [ "$PWD" = "/" ]; then
    echo "Error: No working directory set. Please set a WORKDIR in your Dockerfile before running this script."
    exit 1
fi
uv venv .tbench-testing
source .tbench-testing/bin/activate
uv pip install {packages}
uv run pytest $TEST_DIR/test_outputs.py -rA
"""
TOML_TEST = """import importlib.metadata
import os
import sys
from pathlib import Path

import pytest
import tomli_w


def test_the_requested_versions_and_the_venv():
    assert importlib.metadata.version("tomli-w") == "1.0.0"
    assert pytest.__version__ == "8.4.1"
    assert os.environ.get("VIRTUAL_ENV", "").endswith(".tbench-testing")  # the script's venv is real and active


def test_config_written():
    assert Path("/app/config.toml").read_text() == tomli_w.dumps({"name": "mill", "size": 3})
"""
TOML_SOLUTION = """#!/bin/bash
printf 'name = "mill"\\nsize = 3\\n' > /app/config.toml
"""


def tb_task(
    root: Path, name: str, *, instruction: str, dockerfile: str, solution: str, test_outputs: str, run_tests: str
) -> Path:
    task = root / name
    (task / "tests").mkdir(parents=True)
    (task / "task.yaml").write_text(TB_TASK_YAML.format(instruction=instruction))
    (task / "Dockerfile").write_text(dockerfile)
    (task / "solution.sh").write_text(solution)
    (task / "run-tests.sh").write_text(run_tests)
    (task / "tests" / "test_outputs.py").write_text(test_outputs)
    return task


def write_corpus(root: Path) -> dict[str, str]:
    """The corpus's tasks under root; returns each task's expected verdict."""
    tb_df = "FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\nWORKDIR /app\n"
    tb_task(
        root,
        "legacy-venv-deps",
        instruction='Write /app/config.toml with name = "mill" and size = 3.',
        dockerfile=tb_df,
        solution=TOML_SOLUTION,
        test_outputs=TOML_TEST,
        run_tests=TB_RUN_TESTS.format(packages="pytest==8.4.1 tomli-w==1.0.0"),
    )
    tb_task(
        root,
        "legacy-deps-unresolvable",
        instruction='Write /app/config.toml with name = "mill" and size = 3.',
        dockerfile=tb_df,
        solution=TOML_SOLUTION,
        test_outputs="import agentmill_no_such_package_31\n" + TOML_TEST,
        run_tests=TB_RUN_TESTS.format(packages="pytest==8.4.1 tomli-w==1.0.0 agentmill-no-such-package-31==1.0"),
    )
    # `pip install` into the image's own Python, then `python -m pytest` without a venv: pip answers
    # "already satisfied" offline and the image's python imports the layer's packages.
    tb_task(
        root,
        "legacy-pip-install",
        instruction='Write /app/config.toml with name = "mill" and size = 3.',
        dockerfile=tb_df,
        solution=TOML_SOLUTION,
        test_outputs=TOML_TEST.replace(
            '    assert os.environ.get("VIRTUAL_ENV", "").endswith(".tbench-testing")'
            "  # the script's venv is real and active\n",
            "",
        ),
        run_tests="#!/bin/bash\npip install pytest==8.4.1 tomli-w==1.0.0 || exit 1\n"
        "cd /app && python -m pytest $TEST_DIR/test_outputs.py -rA\n",
    )
    check_user = (
        "#!/bin/bash\nif id appuser && getent group appuser "
        "&& grep -qx done /app/data/out.txt; then echo 1 > /logs/verifier/reward.txt; "
        "else echo 0 > /logs/verifier/reward.txt; fi\n"
    )
    write_task(
        root / "harbor-adduser",
        instruction="Write done into /app/data/out.txt.",
        test_sh=check_user,
        solve_sh="echo done > /app/data/out.txt\n",
        dockerfile="FROM python:3.12-slim\nRUN adduser --disabled-password --gecos '' appuser\n"
        "WORKDIR /app\nRUN mkdir -p /app/data && chown appuser:appuser /app/data\n",
    )
    sums = (
        '#!/bin/bash\nif [ "$(cat /app/sum.txt)" = 6 ]; then echo 1 > /logs/verifier/reward.txt; '
        "else echo 0 > /logs/verifier/reward.txt; fi\n"
    )
    solve = "awk -F, 'NR>1 {s+=$2} END {print s}' /app/x.csv > /app/sum.txt\n"
    write_task(
        root / "harbor-copy-context",
        instruction="Sum column b of /app/x.csv into /app/sum.txt.",
        test_sh=sums,
        solve_sh=solve,
        dockerfile="FROM debian:bookworm-slim\nWORKDIR /app\nCOPY data/x.csv /app/x.csv\n",
        environment_files={"data/x.csv": "a,b\nx,1\ny,2\nz,3\n"},
    )
    outside = write_task(
        root / "harbor-copy-task-root",
        instruction="Sum column b of /app/x.csv into /app/sum.txt.",
        test_sh=sums,
        solve_sh=solve,
        dockerfile="FROM debian:bookworm-slim\nWORKDIR /app\nCOPY data/x.csv /app/x.csv\n",
    )
    (outside / "data").mkdir()
    (outside / "data" / "x.csv").write_text("a,b\nx,1\ny,2\nz,3\n")
    # A solution that needs the network at run time (pip install, a download): the agent gets none
    # here (issue 31 part 2 is not implemented), so the oracle fails and check says why.
    write_task(
        root / "harbor-solution-needs-network",
        instruction="Save PyPI's simple index page of six as /app/six.html.",
        test_sh="#!/bin/bash\nif grep -q six /app/six.html; then echo 1 > /logs/verifier/reward.txt; "
        "else echo 0 > /logs/verifier/reward.txt; fi\n",
        solve_sh="curl -fsS https://pypi.org/simple/six/ -o /app/six.html\n",
    )
    return {
        "harbor-solution-needs-network": "unsolvable",
        "legacy-venv-deps": "ok",
        "legacy-pip-install": "ok",
        "legacy-deps-unresolvable": "test_deps_unresolved",
        "harbor-adduser": "ok",
        "harbor-copy-context": "ok",
        "harbor-copy-task-root": "build_failed",
    }
