"""Run one trial: environment -> agent sandbox -> agent -> fresh verifier sandbox -> result.

Every failure becomes a typed outcome; nothing here raises for a bad task or a broken sandbox.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
import traceback

from agentmill.agents.base import Agent, AgentResult, SandboxStart
from agentmill.errors import AgentmillError, SandboxError, SandboxStartError
from agentmill.images import ImageBuilder
from agentmill.images.errors import ImageBuildError
from agentmill.models.client import ContextExceededError, EndpointError
from agentmill.rollout.early import EarlyStartError, run_early, runs_early, start_key
from agentmill.rollout.result import Timings, TrialResult
from agentmill.runtime.loop_priority import removal_threads, trials_first
from agentmill.runtime.open_files import allow_open_files
from agentmill.runtime.paths import scratch_temp
from agentmill.sandbox.command import OneCommandSandbox
from agentmill.sandbox.disk_quota import DiskQuota, DiskQuotaExceeded, NoQuota, remove_folder, trial_quota
from agentmill.sandbox.protocol import Limits
from agentmill.sandbox.registry import create_sandbox
from agentmill.tasks.behaviour import KindTrial, behaviour_for
from agentmill.tasks.model import Task
from agentmill.verify.outcome import Outcome
from agentmill.verify.staging import stage


def task_limits(task: Task) -> Limits:
    env = task.config.environment
    return Limits(memory_mb=env.memory_mb, cpus=env.cpus, storage_mb=env.storage_mb)


BUILD_FAILED_NOTE = "the environment did not build (a step of the task's Dockerfile failed)"


@trials_first  # the loop every trial shares goes first while it runs; its file work yields to it
async def run_trial(
    task: Task,
    agent: Agent,
    builder: ImageBuilder,
    *,
    agent_result: AgentResult | None = None,
    internet: bool = False,
) -> TrialResult:
    """`internet`: the agent's sandbox gets a user-mode network to public addresses (the caller decides,
    rollout/network.py); the verifier's never has one."""
    started = time.monotonic()
    allow_open_files()  # once per process: hundreds of trials in flight hold thousands of fds
    timings = Timings()
    result = TrialResult(
        task=task.name,
        task_hash=task.content_hash,
        agent=agent.name,
        agent_version=agent.version,
        outcome=Outcome.SANDBOX_ERROR,
        timings=timings,
        internet=internet,
    )
    agent_result = agent_result if agent_result is not None else AgentResult()
    scratch = await asyncio.to_thread(scratch_temp, "trial")  # mkdtemp + chmod: off the event loop
    kind_trial: KindTrial | None = None  # the task kind's part of the trial (tasks/behaviour.py)
    quota: DiskQuota | NoQuota = NoQuota()
    try:
        # every file of the trial in a filesystem of storage_mb (sandbox/disk_quota.py); a mount: off the loop
        quota, note = await asyncio.to_thread(trial_quota, scratch, task.config.environment.storage_mb)
        result.notes += [note] if note else []
        t = time.monotonic()
        try:
            image = await builder.get(task)
        except ImageBuildError as e:  # a step of the task's own Dockerfile failed
            result.outcome, result.exception, result.build_log = Outcome.TASK_ERROR, str(e), e.log[-8000:]
            result.notes.append(BUILD_FAILED_NOTE)
            return result
        except AgentmillError as e:
            result.exception = str(e)
            return result
        behaviour = behaviour_for(task)
        deps_notes = await behaviour.build(task)  # what the kind resolves with the environment (test deps)
        timings.environment = time.monotonic() - t
        result.notes += image.notes + deps_notes
        try:
            rootfs = await asyncio.to_thread(image.instantiate, scratch / "rootfs")  # cp -a: off the event loop
        except (OSError, subprocess.CalledProcessError) as e:
            result.exception = f"could not copy the environment for the trial: {_brief(e)}"
            return result
        limits = task_limits(task)
        try:  # the kind's own part, before the agent's sandbox (tool tasks: a tool host with their databases)
            kind_trial = await behaviour.begin(task, image, scratch, limits)
        except Exception as e:  # noqa: BLE001 - a broken gym or seed: reported, never raised
            result.exception = f"{task.kind} environment: {_brief(e)}"
            if isinstance(e, behaviour.task_faults):  # e.g. the gym, its tools or the seed failed
                result.outcome = Outcome.TASK_ERROR
            return result

        ro = {}
        if agent.needs_solution and task.solution_sources:
            ro["/solution"] = await asyncio.to_thread(stage, task.solution_sources, scratch / "solution")
        spec = image.spec(
            rootfs, limits=limits, ro_mounts=ro, rw_mounts={"/logs/agent": scratch / "agent-logs"}, internet=internet
        )
        agent_outcome = None
        t = time.monotonic()
        early: SandboxStart | None = None
        try:
            sandbox = _agent_sandbox(task, agent, spec)
            kind_trial.attach(sandbox)
            if runs_early(task, agent):  # its first model call overlaps the start (rollout/early.py)
                early = SandboxStart(key=start_key(image.key, spec), ready=asyncio.ensure_future(sandbox.start()))
            else:
                await sandbox.start()
                timings.sandbox_start = time.monotonic() - t
        except Exception as e:  # noqa: BLE001 - SandboxError, no free uid, a failed chown: the machinery's fault
            result.exception = f"sandbox failed to start: {_brief(e)}"
            return result
        try:  # the kind's own state in the started sandbox, before the agent
            await kind_trial.prepare(sandbox)
        except Exception as e:  # noqa: BLE001 - a broken gym or seed: reported, never raised
            await sandbox.stop()
            result.exception = f"{task.kind} environment: {_brief(e)}"
            if isinstance(e, behaviour.task_faults):  # e.g. the gym, its tools or the seed failed
                result.outcome = Outcome.TASK_ERROR
            return result
        t = time.monotonic() if early is None else t  # an early agent's time starts when its sandbox is ready
        try:
            if early is None:
                await asyncio.wait_for(
                    quota.guard(agent.run(task, sandbox, agent_result)), timeout=task.config.agent.timeout_sec
                )
            else:
                await quota.guard(run_early(agent, task, sandbox, early, agent_result, timings, t))
        except EarlyStartError as e:
            result.exception = f"sandbox failed to start: {_brief(e.error)}"
            return result
        except DiskQuotaExceeded as e:  # the agent filled its own disk: its failure, stopped there
            agent_outcome, result.exception = Outcome.AGENT_ERROR, str(e)
        except TimeoutError:
            agent_outcome = Outcome.AGENT_TIMEOUT
            result.exception = f"agent exceeded {task.config.agent.timeout_sec:g}s"
        except SandboxError as e:
            if isinstance(e, SandboxStartError) or not _agent_acted(agent_result):  # the machinery's:
                result.exception = f"sandbox failed during the agent: {e}"
                return result
            # after the agent acted: its own commands killed the guest or the terminal (kill -9 -1, tmux
            # kill-server, memory). Its failure, not to be rerun as infrastructure, and not verified
            agent_outcome = Outcome.AGENT_ERROR
            result.exception = f"the sandbox died under the agent's commands: {e}"
        except EndpointError as e:
            result.outcome, result.exception = Outcome.INFRA_ERROR, str(e)
            return result
        except ContextExceededError as e:  # the agent's own limit: verified like a timeout
            agent_outcome, result.exception = Outcome.CONTEXT_EXCEEDED, str(e)
        except Exception as e:  # the agent's own failure: typed, with its traceback kept
            agent_outcome = Outcome.AGENT_ERROR
            result.exception = "".join(traceback.format_exception_only(type(e), e)).strip()
        finally:
            timings.agent = time.monotonic() - t - (timings.sandbox_start if early is not None else 0.0)
            await sandbox.stop()
            await kind_trial.stop()  # the kind's own processes end with the agent, before verification
        # filled between two looks (NoQuota is never full)
        if isinstance(quota, DiskQuota) and quota.full() and agent_outcome is not Outcome.AGENT_ERROR:
            agent_outcome, result.exception = Outcome.AGENT_ERROR, str(quota.exceeded())

        if agent_outcome is Outcome.AGENT_ERROR:
            result.outcome = agent_outcome
            return result
        if not task.verified:  # nothing to score: reward null
            result.outcome = agent_outcome or Outcome.UNVERIFIED
            return result
        verdict = await kind_trial.verify(task, image, rootfs, scratch, limits, agent_result.steps)
        timings.verifier = verdict.seconds
        result.reward, result.rewards = verdict.reward, verdict.rewards
        result.verifier_stdout, result.verifier_stderr = verdict.stdout, verdict.stderr
        result.tamper = list(getattr(verdict, "tamper", []))  # evidence of what the verifier neutralised
        result.outcome = agent_outcome or verdict.outcome
        if verdict.error and not result.exception:
            result.exception = verdict.error
        return result
    except Exception as e:  # noqa: BLE001 - an unexpected harness failure still ends as one typed trial
        result.outcome, result.exception = Outcome.SANDBOX_ERROR, f"harness error: {_brief(e)}"
        return result
    finally:
        if kind_trial is not None:
            await kind_trial.stop()
        timings.total = time.monotonic() - started
        # the lowest-priority threads: trials still running go first (loop_priority.removal_threads)
        await asyncio.get_running_loop().run_in_executor(removal_threads(), remove_folder, scratch)


def _agent_sandbox(task: Task, agent: Agent, spec):
    """A one-command agent gets a sandbox that is its command's whole life (sandbox/command.py), unless
    the task's kind builds state in the started sandbox first (tool tasks); every other agent a
    started one."""
    if not behaviour_for(task).prepared_before_agent and getattr(agent, "runs_one_command", False):
        return OneCommandSandbox(spec)
    return create_sandbox(spec)


def _agent_acted(agent_result: AgentResult) -> bool:
    return any(step.source == "agent" for step in agent_result.steps)


def _brief(e: BaseException) -> str:
    if isinstance(e, AgentmillError):  # our own errors already say what and where
        return str(e)
    return "".join(traceback.format_exception_only(type(e), e)).strip()
