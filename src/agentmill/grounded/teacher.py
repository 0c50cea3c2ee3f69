"""The teacher's run of a task: the terminus agent in the sandbox (the workspace is the image's
/app), verified by the task's own deterministic checks, with the deliverables copied out of the
agent's final state before its sandbox stops. Runs are stored by statement hash, so a revision
that leaves the statement unchanged reuses the run."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from agentmill.agents.base import AgentResult
from agentmill.errors import SandboxError
from agentmill.images import ImageBuilder
from agentmill.models.client import EndpointError
from agentmill.rollout import TrialResult, run_trial
from agentmill.sandbox.protocol import Sandbox
from agentmill.tasks import load_task
from agentmill.tasks.model import Task
from agentmill.traces.atif import AgentInfo, Step, Trajectory
from agentmill.traces.telemetry import compute_telemetry
from agentmill.verify.outcome import Outcome

MAX_DELIVERABLE = 20 << 20
MAX_TOTAL = 100 << 20  # all deliverables of one run together


class CollectingAgent:
    """Wraps an agent; after it stops (done, failed or timed out) copies each regular file under
    /app/output out of the sandbox (read through the sandbox, so links resolve inside it)."""

    needs_solution = False

    def __init__(self, inner, dest: Path, *, max_files: int = 50):
        self.inner, self.dest, self.max_files = inner, Path(dest), max_files
        self.name, self.version = inner.name, inner.version
        self.collected: list[str] = []

    @property
    def model_name(self):
        return self.inner.model_name

    def identity(self):
        return self.inner.identity()

    async def run(self, task: Task, sandbox: Sandbox, result: AgentResult) -> None:
        try:
            await self.inner.run(task, sandbox, result)
        finally:
            try:
                await self._collect(sandbox)
            except SandboxError as e:  # the agent's own failure stays the trial's outcome
                result.metadata["deliverables_error"] = str(e)

    async def _collect(self, sandbox: Sandbox) -> None:
        listing = await sandbox.exec(
            ["find", "/app/output", "-maxdepth", "3", "-type", "f", "-size", f"-{MAX_DELIVERABLE // 1024}k"], timeout=30
        )
        self.dest.mkdir(parents=True, exist_ok=True)
        total = 0
        for line in listing.stdout.splitlines()[: self.max_files]:
            if total >= MAX_TOTAL:
                break
            rel = line.removeprefix("/app/output/")
            if not line.startswith("/app/output/") or ".." in rel.split("/") or not rel:
                continue
            try:
                data = await sandbox.read_file(line, max_bytes=MAX_DELIVERABLE)
            except (FileNotFoundError, OSError):
                continue
            out = self.dest / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(data[: MAX_TOTAL - total])
            total += len(data)
            self.collected.append(rel)


@dataclass
class TeacherRun:
    folder: Path
    result: TrialResult
    trajectory: Trajectory
    reused: bool = False

    @property
    def deliverables(self) -> Path:
        return self.folder / "deliverables"


def load_run(folder: Path) -> TeacherRun | None:
    if not (folder / "result.json").exists():
        return None
    return TeacherRun(
        folder,
        TrialResult.model_validate_json((folder / "result.json").read_text()),
        Trajectory.model_validate_json((folder / "trajectory.json").read_text()),
        reused=True,
    )


async def run_teacher(task_dir: Path, agent, builder: ImageBuilder, folder: Path) -> TeacherRun:
    """Run once into `folder` (written under a temporary name, then renamed); reuse if present."""
    existing = load_run(folder)
    if existing is not None:
        return existing
    task = load_task(task_dir)
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    collector = CollectingAgent(agent, tmp / "deliverables")
    agent_result = AgentResult()
    result = await run_trial(task, collector, builder, agent_result=agent_result)
    if result.outcome == Outcome.INFRA_ERROR:  # the endpoint failed, not the teacher: no run to keep or judge
        shutil.rmtree(tmp, ignore_errors=True)
        raise EndpointError(result.exception or "the teacher's endpoint failed")
    steps = list(agent_result.steps)
    for i, step in enumerate(steps, 1):
        step.step_id = i
    if not steps:
        steps = [Step(step_id=1, source="user", message=task.instruction)]
    trajectory = Trajectory(
        session_id=f"ground-{task.short_hash}",
        steps=steps,
        agent=AgentInfo(name=agent.name, version=agent.version, model_name=agent.model_name),
        extra={"task": task.name, "task_hash": task.content_hash},
    ).summarize()
    result.agent_metadata = agent_result.metadata
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "result.json").write_text(result.model_dump_json(indent=1))
    (tmp / "trajectory.json").write_text(trajectory.model_dump_json(indent=1, exclude_none=True))
    tele = compute_telemetry(trajectory, json.loads(result.model_dump_json()))
    (tmp / "telemetry.json").write_text(tele.model_dump_json(indent=1))
    (tmp / "trial.json").write_text(
        json.dumps(
            {
                "trial_id": folder.name,
                "task": task.name,
                "task_hash": task.content_hash,
                "task_path": str(task.path),
                "task_source": "grounded",
                "task_metadata": task.config.metadata,
                "instruction": task.instruction,
                "attempt": int(folder.name.rsplit("-a", 1)[-1]) if "-a" in folder.name else 0,
                "agent": agent.name,
                "agent_version": agent.version,
                "model": agent.model_name,
            },
            indent=1,
        )
    )
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
    return TeacherRun(folder, result, trajectory)
