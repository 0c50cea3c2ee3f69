"""Run a project's test suite in the sandbox and read back every test's outcome.

The project's code is task code: it never runs in the host's Python. The probe mounts the
project at /app (writable, as the agent sees it), the pristine test folder at /tests (read-only,
as the verifier sees it, with the same recorder conftest and ini) and the verifier toolkit's
pytest, so a test passes here exactly when it passes in the task's verifier.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentmill.errors import AgentmillError
from agentmill.runtime.paths import ensure_traversable, scratch_temp
from agentmill.sandbox.protocol import Limits, SandboxSpec
from agentmill.sandbox.registry import create_sandbox
from agentmill.verify.toolkit import MOUNT, ensure_toolkit


@dataclass
class SuiteRun:
    outcomes: dict[str, str] = field(default_factory=dict)  # node id -> passed | failed | skipped
    messages: dict[str, str] = field(default_factory=dict)  # node id -> failure text
    output: str = ""
    seconds: float = 0.0
    timed_out: bool = False

    @property
    def passed(self) -> set[str]:
        return {k for k, v in self.outcomes.items() if v == "passed"}


def _readable(path: Path) -> None:
    subprocess.run(["chmod", "-R", "a+rX", str(path)], check=True)


async def run_suite(
    project: Path,
    tests: Path,
    *,
    timeout: float = 300.0,
    pythonpath: Sequence[str] = (),
    extra_mounts: dict[str, Path] | None = None,
) -> SuiteRun:
    """pytest over `tests`/suite with `project` at /app; outcomes by node id (relative to /tests)."""
    toolkit = ensure_toolkit(build=True)
    if toolkit is None:
        raise AgentmillError("the verifier toolkit (pytest) could not be built; run `agentmill toolkit` once online")
    scratch = scratch_temp("probe")
    logs = scratch / "logs"
    (scratch / "rootfs").mkdir()
    logs.mkdir()
    project, tests = project.resolve(), tests.resolve()
    for p in (project, tests, logs):
        ensure_traversable(p)
    _readable(tests)
    owner = project.stat()
    env = {
        "PYTHONPATH": ":".join([*pythonpath, "/app/src", "/app"]),
        "PYTHONDONTWRITEBYTECODE": "1",
        "AGENTMILL_OUTCOMES": "/logs/verifier/outcomes.json",
        "HOME": "/tmp",
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "COLUMNS": "200",
    }
    spec = SandboxSpec(
        rootfs=scratch / "rootfs",
        rw_mounts={"/app": project, "/logs/verifier": logs},
        ro_mounts={MOUNT: toolkit, "/tests": tests, **(extra_mounts or {})},
        workdir="/app",
        env=env,
        limits=Limits(memory_mb=2048, pids=512),
    )
    cmd = [
        f"{MOUNT}/venv/bin/python",
        "-s",
        "-P",
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--rootdir=/tests",
        "--confcutdir=/tests",
        "-c",
        "/tests/pytest.ini",
        "/tests/suite",
    ]
    try:
        async with create_sandbox(spec) as sb:
            res = await sb.exec(cmd, timeout=timeout)
        run = SuiteRun(output=res.output[-20000:], seconds=res.duration, timed_out=res.timed_out)
        found = logs / "outcomes.json"
        if found.is_file() and not found.is_symlink():
            data = json.loads(found.read_text(encoding="utf-8"))
            run.outcomes, run.messages = dict(data.get("outcomes", {})), dict(data.get("messages", {}))
        return run
    finally:
        if os.geteuid() == 0:  # hand the project back to its owner
            subprocess.run(["chown", "-R", "-h", f"{owner.st_uid}:{owner.st_gid}", str(project)], check=False)
        shutil.rmtree(scratch, ignore_errors=True)
