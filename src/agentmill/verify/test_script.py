"""The test-script verifier: run the task's tests over the agent's final state in a fresh sandbox.

A fresh sandbox (not the agent's) means no process the agent left behind can touch the tests or
the reward file, and /tests is never visible while the agent runs. Before it starts, the agent's
final rootfs is hardened on the host (verify/hardening.py); the test script then runs in the
verifier's own environment (verify/isolation.py), as that sandbox's one job under a supervisor
shell (sandbox/command.py: no guest server to boot); the reward is read on the host when test.sh
exits and again once every process is dead (verify/reward_files.py). What was neutralised is
returned as tamper evidence, and a trial with evidence gets no reward.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from agentmill.errors import SandboxError
from agentmill.images import Image
from agentmill.images.tree_copy import copy_tree
from agentmill.sandbox.command import CommandResult, run_command
from agentmill.tasks.model import Task
from agentmill.verify.hardening import harden
from agentmill.verify.isolation import HOME, PIN, verifier_env, write_pin
from agentmill.verify.outcome import Outcome, RewardError, parse_reward
from agentmill.verify.reward_files import JUDGE_INPUT, RewardFiles, read_reward_files, rewritten
from agentmill.verify.staging import stage
from agentmill.verify.start_blame import starts_over_pristine_tree
from agentmill.verify.tamper import Tamper, TamperKind, parse_markers
from agentmill.verify.test_deps import MOUNT as TEST_DEPS_MOUNT
from agentmill.verify.test_deps import prepare as prepare_test_deps
from agentmill.verify.toolkit import MOUNT, ensure_toolkit

_KEEP_OUTPUT = 64 << 10
_GRACE = 0.5  # seconds a sandbox with leftover processes stays up after the script, before the final read


@dataclass
class VerifierResult:
    outcome: Outcome
    reward: float | None = None
    rewards: dict[str, float] = field(default_factory=dict)
    stdout: str = ""
    stderr: str = ""
    returncode: int | None = None
    error: str | None = None
    seconds: float = 0.0
    tamper: list[Tamper] = field(default_factory=list)
    judge_input: bytes | None = None  # /logs/verifier/judge_input.json, for a judged step (verify/judged.py)


async def verify(task: Task, image: Image, rootfs: Path, scratch: Path, limits) -> VerifierResult:
    started = time.monotonic()
    tests, toolkit, logs, home, addopts, deps = await asyncio.to_thread(_host_folders, task, image, scratch)
    mounts = {"/tests": tests, PIN: scratch / "verifier-pin"}
    if toolkit is not None:
        mounts[MOUNT] = toolkit
    if deps is not None:
        mounts[TEST_DEPS_MOUNT] = deps.path
    spec = image.spec(rootfs, limits=limits, ro_mounts=mounts, rw_mounts={"/logs/verifier": logs, HOME: home})
    spec.env = verifier_env(
        image.env, task.config.verifier.env, addopts, toolkit=toolkit is not None, test_deps=deps is not None
    )
    # The commands a planted tool could shadow: the system tree the sandbox mounts (the host's, or a
    # real image's own), the image's /usr/local, the toolkit.
    system = Path(getattr(spec, "system_root", None) or "/")
    command_dirs = (system / "usr/bin", system / "usr/sbin", image.usr_local / "bin") + (
        (toolkit / "bin",) if toolkit is not None else ()
    )
    try:
        tamper = await asyncio.to_thread(
            harden,
            rootfs,
            image.rootfs,
            scratch / "quarantine",
            workdir=image.workdir,
            env=dict(image.env),
            command_dirs=command_dirs,
            overlay=image.overlay,
        )
    except OSError as e:  # the pass itself failed: never judge an unvetted tree
        return VerifierResult(
            Outcome.SANDBOX_ERROR, error=f"pre-verification pass failed: {e}", seconds=time.monotonic() - started
        )
    at_exit: list[RewardFiles] = []

    async def snapshot() -> None:  # the moment test.sh exits; leftovers may still be running
        at_exit.append(await asyncio.to_thread(read_reward_files, logs))

    run = None
    for _ in range(2):  # a second try: a transient failure to start passes, the agent's damage does not
        try:
            run = await run_command(
                spec,
                ["/usr/bin/bash", f"/tests/{task.test_script}"],
                timeout=task.config.verifier.timeout_sec,
                env=spec.env,
                max_output=_KEEP_OUTPUT,
                linger=_GRACE,
                at_exit=snapshot,
            )
            break
        except SandboxError as e:
            failure = e
    if run is None:
        if await starts_over_pristine_tree(image, spec, scratch):  # the agent's final state kept it from starting
            return VerifierResult(
                Outcome.FAILED,
                reward=0.0,
                seconds=time.monotonic() - started,
                tamper=tamper,
                error=f"the verifier could not start over the agent's final state "
                f"(it starts over the task's own): {failure}",
            )
        return VerifierResult(
            Outcome.SANDBOX_ERROR, error=str(failure), seconds=time.monotonic() - started, tamper=tamper
        )
    # The sandbox is gone, and every process in it: what the files hold now is final.
    final = await asyncio.to_thread(read_reward_files, logs)
    tamper += final.evidence + (rewritten(at_exit[0], final) if at_exit else []) + _supervision(run)
    tamper += parse_markers(run.stderr + "\n" + run.stdout)
    result = VerifierResult(
        Outcome.FAILED,
        stdout=run.stdout,
        stderr=run.stderr,
        returncode=run.returncode,
        tamper=tamper,
        judge_input=final.data(JUDGE_INPUT),
    )
    if run.timed_out:
        result.outcome = Outcome.VERIFIER_TIMEOUT
        result.error = f"verifier exceeded {task.config.verifier.timeout_sec:g}s"
    else:
        _judge(task, result, run.returncode, final.data("reward.txt"), final.data("reward.json"))
    withhold_for_tamper(result)
    result.seconds = time.monotonic() - started
    return result


def withhold_for_tamper(result: VerifierResult) -> None:
    """With tamper evidence, whatever the tests said (a pass, a fail, or no usable reward: a
    verifier_error the agent may have caused on purpose), the trial is failed with reward 0: the
    agent's doing, not the verifier's fault, and never rerun as one."""
    if result.tamper and result.outcome in (Outcome.PASSED, Outcome.FAILED, Outcome.VERIFIER_ERROR):
        said = "no reward" if result.reward is None else f"{result.reward:g}"
        result.outcome, result.reward, result.rewards = Outcome.FAILED, 0.0, {}
        result.error = f"tamper evidence ({len(result.tamper)}): reward withheld (the tests said {said})"


def _judge(task: Task, result: VerifierResult, returncode: int, txt: bytes | None, js: bytes | None) -> None:
    try:
        if txt is None and js is None and task.format == "terminal-bench":
            # Terminal-Bench's verdict is the test script's exit status.
            result.reward, result.rewards = (1.0 if returncode == 0 else 0.0), {}
        else:
            result.reward, result.rewards = parse_reward(txt, js)  # reward.txt, when there is one, wins
        result.outcome = Outcome.PASSED if result.reward >= 1.0 - 1e-9 else Outcome.FAILED
    except RewardError as e:
        result.outcome, result.error = Outcome.VERIFIER_ERROR, str(e)


def _supervision(run: CommandResult) -> list[Tamper]:
    """The supervisor marks the sandbox's start, test.sh's exit and its own, once each
    (sandbox/command.py): anything else means a process the tests ran killed it or forged or took
    a mark (a timeout's kill leaves "s" or "sx")."""
    if run.marks == "sxe" or (run.timed_out and run.marks in ("s", "sx")):
        return []
    return [
        Tamper(
            kind=TamperKind.SUPERVISOR,
            path="/tests",
            detail=f"the verifier's supervisor reported {run.marks!r}, not 'sxe': it was killed or its marks were forged",
        )
    ]


def _host_folders(task: Task, image: Image, scratch: Path):
    """The verifier's host folders, made fresh: copies and file-system work, so one hop off the
    event loop (with hundreds of trials, blocking calls there stall every other one)."""
    tests = stage(task.tests_sources, scratch / "tests")
    toolkit = ensure_toolkit(build=True)
    logs, home = _fresh(scratch / "verifier-logs"), _fresh(scratch / "verifier-home")
    _seed_home(image, home)
    addopts = write_pin(_fresh(scratch / "verifier-pin"), tests)
    deps, _notes = prepare_test_deps(task)  # built with the environment (rollout/trial.py): a cache hit here
    return tests, toolkit, logs, home, addopts, deps


def _seed_home(image: Image, home: Path) -> None:
    """The verifier's HOME starts as the image's own home (its git identity, an installed uv, ...):
    the task's files, never the agent's."""
    src = image.rootfs / image.env.get("HOME", "/root").lstrip("/")
    if src.is_dir() and not src.is_symlink():
        copy_tree(src, home, into=True)


def _fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path
