"""Why a trial ended as it did, in a few lines a user can act on (`agentmill check`).

The cause is read from what the trial recorded: the exception it ended with, else the verifier's
own words (pytest's `FAILED ...`/`E   ...` lines, an `Error:` line, or its last line), and the
tails keep the last lines of the verifier's output and of a failed build's log.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from agentmill.rollout.result import TrialResult
from agentmill.runtime.atomic import write_json_atomic

TAIL_LINES = 30
_OFFLINE = re.compile(
    r"Could not resolve host|Temporary failure in name resolution|Network is unreachable|"
    r"Failed to establish a new connection|Could not connect to"
)
_NOISE = re.compile(r"^unknown argument ignored: lazytime$")  # fuse-overlayfs's own start-up line
_PYTEST_LINE = re.compile(r"^(FAILED|ERROR) \S+|^E\s{2,}\S")
_ERROR_LINE = re.compile(
    r"(\b[A-Z]\w*(Error|Exception)\b:?|\berror\b:|No such file or directory|command not found|"
    r"not found|Permission denied)",
    re.IGNORECASE,
)


def tail(text: str, lines: int = TAIL_LINES) -> str:
    kept = [line for line in text.rstrip().splitlines()][-lines:]
    return "\n".join(kept)


def verifier_output(trial: TrialResult) -> str:
    return "\n".join(part for part in (trial.verifier_stdout.rstrip(), trial.verifier_stderr.rstrip()) if part)


def cause(trial: TrialResult) -> str:
    """One short line: what the tests (or the machinery) said went wrong."""
    out = verifier_output(trial)
    lines = [
        line.strip()
        for line in out.splitlines()
        if line.strip() and "AGENTMILL_TAMPER" not in line and not _NOISE.search(line)
    ]
    pytest_lines = [line for line in lines if _PYTEST_LINE.match(line)]
    errors = [line for line in pytest_lines if line.startswith("E ")] or pytest_lines
    if errors:
        return _short(errors[0])
    found = [line for line in lines if _ERROR_LINE.search(line) and not line.startswith("agentmill toolkit: 'uv")]
    if found:
        return _short(found[-1])
    if trial.exception:
        return _short(trial.exception)
    if lines:
        return _short(lines[-1])
    return (
        f"reward {trial.reward:g}; the test script printed nothing"
        if trial.reward is not None
        else "the test script printed nothing"
    )


def solution_failure(trial: TrialResult) -> str:
    """'the solution exited 1 (curl: (6) Could not resolve host: astral.sh); tests: ' when the
    reference solution itself failed (a solution that needs the network, say), else ''."""
    code = trial.agent_metadata.get("solution_exit_code")
    if code in (None, 0):
        return ""
    lines = [line.strip() for line in str(trial.agent_metadata.get("output_tail", "")).splitlines() if line.strip()]
    offline = [line for line in lines if _OFFLINE.search(line)]  # the root cause when there is one
    errors = [line for line in lines if _ERROR_LINE.search(line)]
    said = _short(offline[0] if offline else (errors or lines or [""])[-1], 120)
    return f"the solution exited {code}" + (f" ({said})" if said else "") + "; tests: "


def offline_failure(trial: TrialResult) -> bool:
    """The reference solution failed, said it could not reach the network, and had none."""
    if trial.internet or trial.agent_metadata.get("solution_exit_code") in (None, 0):
        return False
    return bool(_OFFLINE.search(str(trial.agent_metadata.get("output_tail", ""))))


def network_hint(allowed_by_task: bool) -> str:
    """Why a trial had no network, and what gives it one."""
    if allowed_by_task:
        return "the solution needs the network and this check ran with --network none"
    return (
        "the solution needs the network and the task does not allow it: set allow_internet = true in "
        "task.toml's [environment] (or run with --network all, for tasks written for Docker's network-on default)"
    )


def _short(line: str, width: int = 160) -> str:
    line = re.sub(r"\s+", " ", line.strip())
    return line if len(line) <= width else line[: width - 1] + "…"


def keep_trial(trial: TrialResult, dest: Path) -> Path:
    """The trial's record where a user can open it: result.json, the verifier's stdout and stderr."""
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "verifier").mkdir(parents=True)
    write_json_atomic(dest / "result.json", json.loads(trial.model_dump_json()), indent=2)
    (dest / "verifier" / "stdout.txt").write_text(trial.verifier_stdout)
    (dest / "verifier" / "stderr.txt").write_text(trial.verifier_stderr)
    return dest
