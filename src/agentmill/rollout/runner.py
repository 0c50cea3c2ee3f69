"""Run many trials: plan them, skip the finished, run the rest through an executor, record each once.

Layout of a run folder:
    config.json          the RolloutConfig (identity fields are checked on resume)
    run.lock             held by the one process writing this folder (pid and host inside)
    ledger.sqlite        one row per trial (WAL), the plan of the last invocation, and every task
                         name planned with its content hash (edited tasks are refused on resume)
    trials/<trial_id>/   trial.json, trajectory.json (ATIF), result.json, verifier/{stdout,stderr}.txt
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agentmill import __version__
from agentmill.agents import make_agent
from agentmill.agents.base import AgentResult
from agentmill.errors import AgentmillError
from agentmill.images import ImageBuilder
from agentmill.models.client import ModelClient
from agentmill.models.seeding import per_trial
from agentmill.rollout.config import RolloutConfig, read_run_config
from agentmill.rollout.executor import Executor, LocalExecutor
from agentmill.rollout.identity import config_identity
from agentmill.rollout.ledger import Ledger
from agentmill.rollout.lock import RunLock, probe
from agentmill.rollout.network import agent_internet
from agentmill.rollout.plan import TaskRef, TrialPlan, plan_trials
from agentmill.rollout.result import TrialResult
from agentmill.rollout.store import TrialStore
from agentmill.rollout.task_record import Edited, find_edits, task_name
from agentmill.rollout.trial import run_trial
from agentmill.runtime.atomic import write_text_atomic
from agentmill.runtime.loop_priority import trials_first
from agentmill.runtime.paths import sweep_scratch
from agentmill.runtime.whole_steps import whole_step
from agentmill.tasks.hashing import hash_file, hash_text, hash_tree
from agentmill.tasks.model import Task
from agentmill.traces.atif import AgentInfo, Step, Trajectory
from agentmill.traces.telemetry import compute_telemetry
from agentmill.traces.text import clean_text
from agentmill.verify.outcome import Outcome


@dataclass
class RolloutReport:
    planned: int
    skipped: int  # already done in this run folder
    recovered: int  # left unfinished by an interrupted earlier run (settled from their folder, or run again)
    ran: int
    # with keep_results only (a long run's memory must not grow with its trials): verifier output cut
    # to its tail (slim_result); the trial folder holds all of it
    results: list[TrialResult] = field(default_factory=list)
    reused: int = 0  # taken from the trial store (finished by an earlier run sharing it)
    unrecorded: list[str] = field(default_factory=list)  # trials whose folder could not be written


# Characters of each verifier stream a report keeps per recorded trial: a long rollout's memory must
# not grow with verifier output (the trial folder holds all of it: verifier/stdout.txt, stderr.txt).
REPORT_OUTPUT_CHARS = 4096


def slim_result(result: TrialResult) -> TrialResult:
    """The result as RolloutReport.results keeps it: verifier output cut to its last REPORT_OUTPUT_CHARS."""
    if len(result.verifier_stdout) <= REPORT_OUTPUT_CHARS and len(result.verifier_stderr) <= REPORT_OUTPUT_CHARS:
        return result
    return result.model_copy(
        update={
            "verifier_stdout": result.verifier_stdout[-REPORT_OUTPUT_CHARS:],
            "verifier_stderr": result.verifier_stderr[-REPORT_OUTPUT_CHARS:],
        }
    )


def preflight(
    run_dir: Path,
    config: RolloutConfig,
    tasks: Iterable[Task | TaskRef] | None = None,
    *,
    task_key: Callable[[Task | TaskRef], str] = task_name,
) -> None:
    """Everything that can refuse a run, checked before anything costly starts (a model server, builds):
    another process holding the folder, or a resume whose identity changed (with `tasks` that can be
    read again, not an iterator: also a task edited since the folder recorded it)."""
    if run_dir.exists():
        probe(run_dir)
        check_identity(run_dir, config, tasks, task_key=task_key)


def check_identity(
    run_dir: Path,
    config: RolloutConfig,
    tasks: Iterable[Task | TaskRef] | None = None,
    *,
    task_key: Callable[[Task | TaskRef], str] = task_name,
) -> dict[str, str]:
    """Refuse a resume whose settings changed (and, given re-readable `tasks`, one with edited tasks),
    writing nothing. Returns the task hashes an older config.json recorded (to migrate), else {}."""
    path = run_dir / "config.json"
    if not path.exists():
        return {}
    try:
        old, legacy = read_run_config(path)
    except ValueError as e:
        raise AgentmillError(f"{path}: unreadable run config ({str(e).splitlines()[0]})") from None
    changes = config.identity_changes(old)
    if tasks is not None and not isinstance(tasks, Iterator):
        pairs = ((task_key(t), t.content_hash) for t in tasks)
        changes += find_edits(run_dir / "ledger.sqlite", legacy, pairs).changes()
    if changes:
        raise AgentmillError(refusal(run_dir, changes))
    return legacy


def refusal(run_dir: Path, changes: list[str]) -> str:
    return (
        f"{run_dir} was made with other settings; refusing to resume: "
        + "; ".join(changes)
        + ". Use a new --out folder, or the original settings."
    )


def open_run(run_dir: Path, config: RolloutConfig) -> tuple[RunLock, Ledger, dict[str, str]]:
    """Lock, then create or resume a run folder: (the lock, the ledger, the task hashes an older
    config.json holds, to migrate). A resume whose settings changed is refused, naming the change;
    config.json is written once the plan is (`plan_run`), so a refused resume leaves it as it was."""
    run_dir.mkdir(parents=True, exist_ok=True)
    lock = RunLock(run_dir).acquire()
    try:
        legacy = check_identity(run_dir, config)
    except AgentmillError:
        lock.release()
        raise
    (run_dir / "trials").mkdir(exist_ok=True)
    for stale in (run_dir / "trials").glob(".tmp-*"):  # half-written folders of a killed run (we hold the lock)
        shutil.rmtree(stale, ignore_errors=True)
    return lock, Ledger(run_dir / "ledger.sqlite"), legacy


def plan_run(
    ledger: Ledger,
    run_dir: Path,
    config: RolloutConfig,
    tasks: Iterable[Task | TaskRef],
    *,
    copies: dict[str, int] | None,
    legacy: dict[str, str],
    task_key: Callable[[Task | TaskRef], str],
    loaded: dict[str, Task],
) -> int:
    """Write the plan and record each task's hash as the tasks stream through, in one transaction:
    a task edited since the folder recorded it refuses the resume, and the transaction is rolled
    back (nothing written, nothing run). Then config.json, without per-task state (an older one's
    `task_hashes` are in the ledger now). Returns the trials planned."""
    edited = Edited()
    with ledger.planning(legacy) as plan:

        def recorded(ts: Iterable[Task | TaskRef]) -> Iterator[Task | TaskRef]:
            for t in ts:
                if plan.task(task_key(t), t.content_hash) is not None:
                    edited.add(task_key(t))
                    continue
                if isinstance(t, Task):
                    loaded[t.content_hash] = t
                yield t

        for p in plan_trials(config, recorded(tasks), copies):
            plan.trial(p.trial_id, p.ref.name, p.attempt, p.ref.content_hash, p.ref.path)
        if edited.count:
            raise AgentmillError(refusal(run_dir, edited.changes()))
        planned = plan.count()
    write_text_atomic(run_dir / "config.json", config.model_dump_json(indent=2))
    return planned


def require_toolkit() -> None:
    """Infrastructure fails loudly: never verify without the offline toolkit that test scripts rely on."""
    from agentmill.verify.toolkit import ensure_toolkit

    if ensure_toolkit(build=True) is None:
        raise AgentmillError(
            "the offline verifier toolkit could not be built (pip install of pytest failed: is the "
            "package registry reachable?); run `agentmill toolkit` once with network access, "
            "then run again. Nothing was verified."
        )


@trials_first  # the loop every trial shares goes first while they run (loop_priority.py)
async def run_rollout(
    config: RolloutConfig,
    tasks: Iterable[Task | TaskRef],
    run_dir: Path,
    *,
    client: ModelClient | None = None,
    retry_infra: bool = False,
    retry_unjudged: bool = False,
    builder: ImageBuilder | None = None,
    on_start: Callable[[TrialPlan], None] | None = None,
    on_done: Callable[[TrialResult], None] | None = None,
    on_plan: Callable[[int], None] | None = None,
    copies: dict[str, int] | None = None,
    executor: Executor | None = None,
    store: TrialStore | None = None,
    keep_results: bool = False,
    task_key: Callable[[Task | TaskRef], str] = task_name,
) -> RolloutReport:
    """Run every planned trial not done yet in `run_dir`. `tasks` may be loaded tasks or references
    (`TaskRef`), consumed once: references are loaded when their trial is dispatched, so the driver's
    memory stays flat in the number of tasks. `keep_results`: also return every result (in memory).
    `task_key`: the name each task's content hash is recorded under (a resume finding that name with
    other content is refused)."""
    lock, ledger, legacy = open_run(run_dir, config)
    trials_dir = run_dir / "trials"
    try:
        await asyncio.to_thread(require_toolkit)
        await asyncio.to_thread(sweep_scratch)  # sandboxes of a killed earlier run
        interrupted = ledger.count("running")
        ledger.recover(trials_dir)
        loaded: dict[str, Task] = {}  # tasks the caller gave loaded (it holds them anyway), by content hash
        planned = plan_run(
            ledger, run_dir, config, tasks, copies=copies, legacy=legacy, task_key=task_key, loaded=loaded
        )
        # rerun: infrastructure failures, and unjudged trials (once a judge is configured)
        again = ({o.value for o in Outcome if o.is_infra} if retry_infra else set()) | (
            {Outcome.UNJUDGED.value} if retry_unjudged else set()
        )
        if again:
            infra = ledger.done_with(again)
            for tid in infra:
                shutil.rmtree(trials_dir / tid, ignore_errors=True)
            ledger.forget(infra)

        def pending() -> Iterator[TrialPlan]:  # the planned trials not done, read from the ledger as needed
            for tid, name, attempt, task_hash, path in ledger.unfinished_plan():
                assert task_hash is not None and path is not None  # set_plan above recorded both
                ref = TaskRef(name, path, task_hash)
                yield TrialPlan(tid, ref, attempt, task=loaded.get(task_hash))

        reused = 0
        if store is not None:
            for p in pending():
                if store.get(p.trial_id) is not None and await asyncio.to_thread(_adopt, store, trials_dir, p, config):
                    ledger.start(p.trial_id, p.ref.name, p.ref.content_hash, p.attempt)
                    ledger.finish(p.trial_id, json.loads((trials_dir / p.trial_id / "result.json").read_text()))
                    reused += 1
        todo = ledger.unfinished_count()
        if on_plan:
            on_plan(todo)
        builder = builder or ImageBuilder()
        unrecorded: list[str] = []

        def dispatched(plan: TrialPlan) -> None:  # in the driver: the trial is running from now on
            plan.load()  # its task, from its folder (a folder edited since planning: the trial ends task_error)
            if on_start:
                on_start(plan)
            ledger.start(plan.trial_id, plan.ref.name, plan.ref.content_hash, plan.attempt)

        attempt = TrialWork(config, client, builder)  # where the sandbox is: here, or shipped to a node

        async def record(plan: TrialPlan, outcome: tuple[TrialResult, Trajectory]) -> TrialResult | None:  # driver
            result, trajectory = outcome
            try:
                await whole_step(_record_trial, ledger, trials_dir, plan, config, result, trajectory)
            except Exception as e:  # noqa: BLE001 - the row stays 'running': the next resume runs it again
                unrecorded.append(plan.trial_id)
                result.exception = f"could not record the trial: {type(e).__name__}: {e}"
            else:
                if store is not None:
                    try:
                        await asyncio.to_thread(store.put, plan.trial_id, trials_dir / plan.trial_id)
                    except Exception:  # noqa: BLE001 - the store is a cache: losing an entry costs a rerun, not data
                        pass
            if on_done:
                on_done(result)
            plan.task = None  # recorded: an executor that keeps its jobs keeps only the reference
            if not keep_results:
                return None
            return result if plan.trial_id in unrecorded else slim_result(result)

        results = await (executor or LocalExecutor(config.concurrency)).map(
            attempt, pending(), before=dispatched, after=record
        )
        return RolloutReport(
            planned=planned,
            skipped=planned - todo - reused,
            recovered=interrupted,
            ran=todo,
            results=list(results) if keep_results else [],
            reused=reused,
            unrecorded=unrecorded,
        )
    finally:
        ledger.close()
        lock.release()


class TrialWork:
    """The executor's `work`: one trial where the sandbox is. It pickles as settings only, so an
    executor can ship it to another machine (Ray): there it opens its own client to the same endpoint
    (the key travels with it) and builds images in that machine's own cache."""

    def __init__(self, config: RolloutConfig, client: ModelClient | None, builder: ImageBuilder | None):
        self.config, self.client, self.builder = config, client, builder
        self._endpoint: tuple[str, str, str | None] | None = None  # set when unpickled: the client to open

    async def __call__(self, plan: TrialPlan) -> tuple[TrialResult, Trajectory]:
        if self.builder is None:
            self.builder = ImageBuilder()
        if self.client is None and self._endpoint is not None:
            base_url, model, key = self._endpoint
            c = self.config
            self.client = ModelClient(
                base_url=base_url,
                model=model,
                api_key=key,
                sampling=c.sampling,
                timeout=c.request_timeout,
                max_retries=c.max_retries,
                max_concurrency=c.model_concurrency,
                prices=c.prices,
            )
        return await _attempt(plan, self.config, self.client, self.builder)

    def failure(self, plan: TrialPlan, message: str) -> tuple[TrialResult, Trajectory]:
        """The result of a trial the executor could not run (its node kept dying): a sandbox_error."""
        result = TrialResult(
            task=plan.ref.name,
            task_hash=plan.ref.content_hash,
            agent=self.config.agent,
            agent_version=self.config.agent_version,
            outcome=Outcome.SANDBOX_ERROR,
            exception=clean_text(message),
            trial_id=plan.trial_id,
            attempt=plan.attempt,
            model=self.config.model,
        )
        return result, _trajectory(plan, self.config, None, AgentResult())

    async def close(self) -> None:
        """Close a client this copy opened itself (the driver's client belongs to the driver)."""
        if self._endpoint is not None and self.client is not None:
            await self.client.close()
            self.client = None

    def __getstate__(self) -> dict:
        key = os.environ.get(self.config.api_key_env) if self.config.api_key_env else None
        endpoint = self._endpoint or (self.client and (self.client.base_url, self.client.model, key))
        return {"config": self.config, "endpoint": endpoint or None}

    def __setstate__(self, state: dict) -> None:
        self.config, self._endpoint = state["config"], state["endpoint"]
        self.client = self.builder = None


async def _attempt(plan: TrialPlan, config: RolloutConfig, client, builder) -> tuple[TrialResult, Trajectory]:
    """One trial, whatever happens: an exception anywhere in the harness becomes a typed result."""
    agent = None
    agent_result = AgentResult()
    try:
        if plan.task is None:  # its folder no longer loads as planned: nothing of it runs (the task's fault)
            result = _unrun(plan, config, Outcome.TASK_ERROR, plan.problem or f"task {plan.ref.name} was not loaded")
        else:
            agent = make_agent(
                config.agent,
                client=per_trial(client, plan.trial_id),
                max_turns=config.max_turns,
                max_context=config.max_context,
            )
            internet = agent_internet(config.network, plan.task)
            result = await run_trial(plan.task, agent, builder, agent_result=agent_result, internet=internet)
    except Exception as e:  # noqa: BLE001 - run_trial types its own failures; this is the harness's last word
        detail = "".join(traceback.format_exception_only(type(e), e)).strip()
        result = _unrun(plan, config, Outcome.SANDBOX_ERROR, f"harness error: {detail}")
    trajectory = _trajectory(plan, config, agent, agent_result)
    result.trial_id, result.attempt, result.model = plan.trial_id, plan.attempt, config.model
    fm = trajectory.final_metrics
    assert fm is not None  # _trajectory summarized it
    result.tokens = {"prompt": fm.total_prompt_tokens or 0, "completion": fm.total_completion_tokens or 0}
    result.cost_usd = fm.total_cost_usd
    result.agent_metadata = agent_result.metadata
    result.exception = clean_text(result.exception) or None
    return result, trajectory


def _unrun(plan: TrialPlan, config: RolloutConfig, outcome: Outcome, exception: str) -> TrialResult:
    """The result of a trial that ended before its agent ran."""
    return TrialResult(
        task=plan.ref.name,
        task_hash=plan.ref.content_hash,
        agent=config.agent,
        agent_version=config.agent_version,
        outcome=outcome,
        exception=exception,
    )


def _trajectory(plan: TrialPlan, config: RolloutConfig, agent, agent_result: AgentResult) -> Trajectory:
    steps = list(agent_result.steps)
    if not any(s.source == "user" for s in steps):  # scripted agents: the task is still the prompt
        instruction = plan.task.instruction if plan.task is not None else ""
        steps.insert(0, Step(step_id=0, source="user", message=instruction))
    for i, step in enumerate(steps, 1):
        step.step_id = i
    ident = config_identity(config)
    return Trajectory(
        session_id=plan.trial_id,
        agent=AgentInfo(
            name=config.agent,
            version=config.agent_version,
            model_name=agent.model_name if agent is not None else config.model,
            extra={"agentmill_version": __version__, "max_turns": ident["max_turns"], "sampling": ident["sampling"]},
        ),
        steps=steps,
        extra={"task": plan.ref.name, "task_hash": plan.ref.content_hash, "attempt": plan.attempt},
    ).summarize()


def _trial_record(plan: TrialPlan, config: RolloutConfig) -> dict:
    ident = config_identity(config)
    task = plan.task  # None: its folder no longer loaded as planned (the trial ended task_error)
    return {
        "trial_id": plan.trial_id,
        "task": plan.ref.name,
        "task_hash": plan.ref.content_hash,
        "task_path": str(plan.ref.path),
        "task_source": config.dataset,
        "task_metadata": task.config.metadata if task is not None else {},
        "verifier_hash": verifier_hash(task) if task is not None else None,
        "instruction": task.instruction if task is not None else None,
        "attempt": plan.attempt,
        "agent": ident["agent"],
        "agent_version": ident["agent_version"],
        "model": ident["model"],
        "sampling": ident["sampling"],
        "internet": plan.task is not None and agent_internet(config.network, plan.task),  # the agent's network, as run
        "network": config.network,  # the user's switch
    }


def _record_trial(
    ledger: Ledger,
    trials_dir: Path,
    plan: TrialPlan,
    config: RolloutConfig,
    result: TrialResult,
    trajectory: Trajectory,
) -> None:
    """The trial's folder, then its row marked done: one step, so an interrupt never leaves a folder
    without its row (the resume would recover it, but `status` and exports would miss it meanwhile)."""
    _write_trial(trials_dir, plan, config, result, trajectory)
    ledger.finish(plan.trial_id, json.loads(result.model_dump_json()))


def _write_trial(
    trials_dir: Path, plan: TrialPlan, config: RolloutConfig, result: TrialResult, trajectory: Trajectory
) -> None:
    """Write the folder under a temporary name, then rename: a trial folder is whole or absent."""
    tmp = trials_dir / f".tmp-{plan.trial_id}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "verifier").mkdir(parents=True)
    (tmp / "trial.json").write_text(json.dumps(_trial_record(plan, config), indent=2))
    (tmp / "trajectory.json").write_text(trajectory.model_dump_json(indent=2, exclude_none=True))
    (tmp / "verifier" / "stdout.txt").write_text(result.verifier_stdout, errors="replace")
    (tmp / "verifier" / "stderr.txt").write_text(result.verifier_stderr, errors="replace")
    (tmp / "result.json").write_text(result.model_dump_json(indent=2))
    telemetry = compute_telemetry(trajectory, json.loads(result.model_dump_json()))
    (tmp / "telemetry.json").write_text(telemetry.model_dump_json(indent=2))
    _publish(tmp, trials_dir / plan.trial_id)


def _adopt(store: TrialStore, trials_dir: Path, plan: TrialPlan, config: RolloutConfig) -> bool:
    """Copy a stored trial into this run; its trial.json says where this run found the task. False if it
    fails (or the task folder no longer loads as planned: the trial then runs, and ends task_error)."""
    if plan.load().task is None:
        return False
    tmp = trials_dir / f".tmp-{plan.trial_id}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        store.copy_to(plan.trial_id, tmp)
        (tmp / "trial.json").unlink(missing_ok=True)  # a link into the store: replace, never write through
        (tmp / "trial.json").write_text(
            json.dumps({**_trial_record(plan, config), "reused_from": str(store.root)}, indent=2)
        )
        _publish(tmp, trials_dir / plan.trial_id)
        return True
    except (OSError, ValueError):
        shutil.rmtree(tmp, ignore_errors=True)
        return False


def _publish(tmp: Path, final: Path) -> None:
    for f in tmp.rglob("*"):
        if f.is_file():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)


def verifier_hash(task: Task) -> str:
    """Which tests judged the trial: a hash over the verifier's files."""
    return hash_text(*(hash_tree(p) if p.is_dir() else hash_file(p) for p in task.tests_sources))
