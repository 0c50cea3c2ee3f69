"""`agentmill check`: every task's oracle must pass and its untouched state must not.

It runs oracle and nop trials, so it lives with the rollouts: the verifier never imports the
rollout machinery (verify <- rollout, one way).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentmill.agents import NopAgent, OracleAgent
from agentmill.agents.base import AgentResult
from agentmill.images import ImageBuilder
from agentmill.rollout.explain import (
    cause,
    keep_trial,
    network_hint,
    offline_failure,
    solution_failure,
    tail,
    verifier_output,
)
from agentmill.rollout.network import DEFAULT_NETWORK, agent_internet
from agentmill.rollout.result import TrialResult
from agentmill.rollout.runner import require_toolkit
from agentmill.rollout.trial import BUILD_FAILED_NOTE, run_trial
from agentmill.runtime.paths import sweep_scratch
from agentmill.tasks.behaviour import behaviour_for
from agentmill.tasks.model import Task
from agentmill.verify.judge import NEEDS_JUDGE
from agentmill.verify.mutation import ToolAudit
from agentmill.verify.outcome import Outcome
from agentmill.verify.test_deps import UNRESOLVED_NOTE
from agentmill.verify.tool_lints import LINT_VERDICTS

VERDICTS = {
    "ok": "oracle passes, nop fails",
    "no_verifier": 'no verifier: the task has [verifier] kind = "none" (an unverified task; nothing to check)',
    "vacuous": "the untouched state already passes",
    "unsolvable": "the reference solution does not pass",
    "test_deps_unresolved": "the packages the test script installs could not be resolved when the environment was built",
    "build_failed": "the task's environment does not build",
    "no_solution": "the task has no reference solution",
    "needs_container": "the environment needs a container backend",
    "broken": "the task could not be checked (sandbox or verifier error)",
    # the reward depends on a judged check (a tool task's response_check, a grounded rubric) and no judge is
    # configured: every other check was audited (oracle passes them, nop fails, tool tasks' mutants die)
    "needs_judge": NEEDS_JUDGE,
    # tool tasks (verify/tool_lints.py, verify/mutation.py)
    **LINT_VERDICTS,
    "weak_verifier": "a wrong end state (a mutant of the oracle's) passes every verifier",
}
CHECK_PASSES = frozenset({"ok", "needs_judge", "no_verifier"})  # verdicts that do not fail `agentmill check`


@dataclass
class CheckResult:
    task: Task
    oracle: TrialResult | None
    nop: TrialResult | None  # None: an unverified task, not run
    audit: ToolAudit | None = None  # tool tasks: lints and mutants
    kept: dict[str, str] = field(default_factory=dict)  # agent -> the trial's kept folder

    @property
    def _nop(self) -> TrialResult:
        """The nop's trial: run for every verified task (the verdicts that read it are theirs)."""
        assert self.nop is not None, "a verified task's check runs the nop"
        return self.nop

    @property
    def verdict(self) -> str:
        if not self.task.verified:
            return "no_verifier"
        nop = self._nop
        if nop.outcome is Outcome.SANDBOX_ERROR and nop.exception and "container backend" in nop.exception:
            return "needs_container"
        lint = self._lint()
        if lint is not None:
            return lint.code
        verdict = self._trial_verdict()
        if verdict in CHECK_PASSES and self.audit is not None and self.audit.error:
            return "broken"
        if verdict in CHECK_PASSES and self.audit is not None and self.audit.survivors:
            return "weak_verifier"
        return verdict

    def _lint(self):
        errors = [lint for lint in (self.audit.lints if self.audit else []) if lint.severity == "error"]
        order = list(LINT_VERDICTS)
        return min(errors, key=lambda lint: order.index(lint.code)) if errors else None

    def _trial_verdict(self) -> str:
        nop = self._nop
        if nop.outcome is Outcome.PASSED:
            return "vacuous"
        if self.oracle is None:
            return "no_solution"
        if self.oracle.outcome is Outcome.PASSED:
            return (
                "ok"
                if nop.outcome is Outcome.FAILED
                else "needs_judge"
                if nop.outcome is Outcome.UNJUDGED
                else "broken"
            )
        if self.oracle.outcome is Outcome.UNJUDGED:  # never "ok": the judged part of the reward was not checked
            return "needs_judge" if nop.outcome in (Outcome.FAILED, Outcome.UNJUDGED) else "broken"
        if self.oracle.outcome is Outcome.TASK_ERROR and BUILD_FAILED_NOTE in self.oracle.notes:
            return "build_failed"
        if any(n.startswith(UNRESOLVED_NOTE) for n in self.oracle.notes):
            return "test_deps_unresolved"  # the tests could not run as written: not the solution's fault
        if self.oracle.outcome in {
            Outcome.SANDBOX_ERROR,
            Outcome.TASK_ERROR,
            Outcome.VERIFIER_ERROR,
            Outcome.VERIFIER_TIMEOUT,
        }:
            return "broken"
        return "unsolvable"

    @property
    def reason(self) -> str:
        lint = self._lint()
        if lint is not None:
            return f"{lint.code}: {lint.verifier + ': ' if lint.verifier else ''}{lint.message}"
        if self.verdict == "broken" and self.audit is not None and self.audit.error:
            return f"audit: {self.audit.error}"
        if self.verdict == "needs_judge":
            nop = (
                "nop fails them"
                if self._nop.outcome is Outcome.FAILED
                else "nop passes every check that ran too: only the judge can fail it"
            )
            return f"{NEEDS_JUDGE}; not run: {self._unjudged_checks()}; the oracle passes every check that ran, {nop}"
        if self.verdict == "weak_verifier" and self.audit is not None:  # the verdict comes from the audit
            return "weak_verifier: " + "; ".join(
                f"mutant {m.name} survived ({m.description})" for m in self.audit.survivors
            )
        verdict = self.verdict
        if verdict == "test_deps_unresolved" and self.oracle is not None:  # the verdict comes from the oracle
            note = next(n for n in self.oracle.notes if n.startswith(UNRESOLVED_NOTE))
            return f"{note}; oracle: {cause(self.oracle)}"
        if (
            verdict in ("unsolvable", "broken")
            and self.oracle is not None
            and self.oracle.outcome is not Outcome.PASSED
        ):
            said = f"oracle: {solution_failure(self.oracle)}{cause(self.oracle)}"  # its own failure, never the nop's
            if offline_failure(self.oracle):
                return f"{network_hint(self.task.config.environment.allow_internet)}; {said}"
            return said
        if verdict in ("vacuous", "broken") and self._nop.outcome is Outcome.PASSED:
            return VERDICTS["vacuous"]
        for trial in (self.oracle, self.nop):
            if trial is not None and trial.exception and verdict != "ok":
                return f"{trial.agent}: {trial.exception}"
        return VERDICTS[verdict]

    def _unjudged_checks(self) -> str:
        exc = next(
            (t.exception for t in (self.oracle, self.nop) if t is not None and t.outcome is Outcome.UNJUDGED), None
        )
        return (exc or "").split(": needs a judge", 1)[0] or "the rubric"

    def to_json(self) -> dict:
        def side(t: TrialResult | None, folder: str | None) -> dict | None:
            if t is None:
                return None
            row: dict[str, Any] = {
                "reward": t.reward,
                "outcome": t.outcome.value,
                "exception": t.exception,
                "verifier_tail": tail(verifier_output(t)),
                "notes": t.notes,
                "internet": t.internet,
            }
            if t.tamper:
                row["tamper"] = [e.model_dump(mode="json") for e in t.tamper]
            if t.build_log:
                row["build_log_tail"] = tail(t.build_log)
            if "solution_exit_code" in t.agent_metadata:
                row["solution"] = {
                    "exit_code": t.agent_metadata["solution_exit_code"],
                    "output_tail": t.agent_metadata.get("output_tail", ""),
                }
            if folder:
                row["trial_dir"] = folder
            return row

        return {
            "task": self.task.name,
            "task_hash": self.task.content_hash,
            "oracle": side(self.oracle, self.kept.get("oracle")),
            "nop": side(self.nop, self.kept.get("nop")),
            "verdict": self.verdict,
            "reason": self.reason,
            **(self.audit.to_json() if self.audit is not None else {}),
            **self._image(),
        }

    def _image(self) -> dict:
        """Debian-built images say which base and layers the task used (images/build.py's note)."""
        if self.nop is None:
            return {}
        line = next((n for n in self.nop.notes if n.startswith("image ") and "Debian layers" in n), None)
        return {"image": line} if line else {}


async def check_tasks(
    tasks: list[Task],
    *,
    concurrency: int = 4,
    builder: ImageBuilder | None = None,
    on_done: Callable[[CheckResult], None] | None = None,
    keep: Path | None = None,
    network: str = DEFAULT_NETWORK,
) -> list[CheckResult]:
    """`keep`: a folder where each trial's record (result.json, the verifier's output) is kept,
    one folder per task and agent. `network`: the agents' network (rollout/network.py)."""
    await asyncio.to_thread(require_toolkit)  # fail loudly, once, before any trial
    builder = builder or ImageBuilder()
    await asyncio.to_thread(sweep_scratch)
    gate = asyncio.Semaphore(concurrency)

    async def trial(task: Task, agent) -> TrialResult:
        async with gate:
            said = AgentResult()
            internet = agent_internet(network, task)
            result = await run_trial(task, agent, builder, agent_result=said, internet=internet)
            result.agent_metadata = said.metadata  # the solution's exit code
            seen = said.steps[-1].observation if said.steps else None
            if "solution_exit_code" in said.metadata and seen is not None and seen.results:  # what the solution printed
                result.agent_metadata["output_tail"] = tail(str(seen.results[0].content), 40)
            return result

    async def audit(task: Task) -> ToolAudit:
        async with gate:
            return await behaviour_for(task).audit(task, builder)

    async def one(task: Task) -> CheckResult:
        if not task.verified:  # said so, not failed: there is nothing to check
            result = CheckResult(task, None, None)
            if on_done:
                on_done(result)
            return result
        oracle_run = trial(task, OracleAgent()) if task.solution_script else None
        if oracle_run is None:
            result = CheckResult(task, None, await trial(task, NopAgent()))
        else:
            oracle, nop = await asyncio.gather(oracle_run, trial(task, NopAgent()))
            result = CheckResult(task, oracle, nop)
        if behaviour_for(task).audits:  # e.g. tool tasks: lints and negative verification by mutation
            result.audit = await audit(task)
        if keep is not None:
            for t in (result.oracle, result.nop):
                if t is not None:
                    folder = await asyncio.to_thread(keep_trial, t, keep / task.name / t.agent)
                    result.kept[t.agent] = str(folder)
        if on_done:
            on_done(result)
        return result

    return list(await asyncio.gather(*(one(t) for t in tasks)))
