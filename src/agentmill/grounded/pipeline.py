"""`agentmill ground`: seeds -> workspace with hidden roles -> evidence graph (fact-checked) ->
spec -> teacher run -> revision (rerun only if the statement changed) -> admission -> task folders.

One seed's failure (a model role answering garbage, an endpoint down, an unreadable file) is
recorded with the stage and whose fault it was, and the run goes on with the next seed."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agentmill.agents.terminus import TerminusAgent
from agentmill.errors import AgentmillError
from agentmill.grounded.admission import Admission, AdmissionPolicy, admit
from agentmill.grounded.ask import ModelReplyError
from agentmill.grounded.assemble import Sources, assemble
from agentmill.grounded.checkpoint import Checkpoints, Revision
from agentmill.grounded.environment import EnvironmentConfig
from agentmill.grounded.graph import build_graph
from agentmill.grounded.records import Graph, Seed, Spec
from agentmill.grounded.revise import revise
from agentmill.grounded.roles import Roles
from agentmill.grounded.spec import compile_spec, statement_hash
from agentmill.grounded.task_folder import write_grounded_task
from agentmill.grounded.teacher import run_teacher
from agentmill.images import ImageBuilder
from agentmill.models.client import EndpointError


class GroundSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    attempts: int = Field(1, ge=1)  # teacher runs per final spec (k rollouts per query)
    max_turns: int = Field(50, ge=1)
    revise: bool = True
    admission: AdmissionPolicy = Field(default_factory=AdmissionPolicy)
    prompts_dir: str | None = None


class AttemptOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")
    attempt: int
    run: str
    reused: bool
    admission: Admission


class SeedOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seed_id: str
    stage: str  # the last stage reached: assemble, graph, spec, teacher, revise, admission, done
    error: str | None = None
    fault: str | None = None  # "model:<role>", "endpoint:<role>", "input"
    files: dict[str, str] = Field(default_factory=dict)  # workspace file -> role
    nodes_kept: int = 0
    nodes_dropped: int = 0
    revised: list[str] = Field(default_factory=list)
    statement_changed: bool = False
    attempts: list[AttemptOutcome] = Field(default_factory=list)
    task: str | None = None  # the admitted task folder


def task_name(seed: Seed) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", seed.occupation.lower()).strip("-")[:40]
    return f"{slug}-{seed.seed_id}"


async def ground_seed(
    seed: Seed,
    sources: Sources,
    roles: Roles,
    store: Path,
    builder: ImageBuilder,
    settings: GroundSettings,
    clients: dict | None = None,
    *,
    environment: EnvironmentConfig | None = None,
    on_stage=None,
) -> SeedOutcome:
    """One seed through every stage. A stage finished by an earlier, interrupted run of the same
    store is taken from its checkpoint under work/<seed>/ (checkpoint.py), so a resumed seed goes
    on from its last finished step; `on_stage(stage)` reports each step as it starts."""
    clients = clients if clients is not None else {}

    def client(role: str):
        if role not in clients:
            clients[role] = roles.client(role)
        return clients[role]

    def reached(stage: str, detail: str = "") -> None:
        out.stage = stage
        if on_stage:
            on_stage(stage + (f" ({detail})" if detail else ""))

    pdir = Path(settings.prompts_dir) if settings.prompts_dir else None
    work = store / "work" / seed.seed_id
    out = SeedOutcome(seed_id=seed.seed_id, stage="assemble")
    role = "assembler"
    resume = Checkpoints(work, seed)
    try:
        reached("assemble", "resumed" if resume.workspace() else "")
        ws = resume.workspace() or await assemble(seed, sources, client("assembler"), work, prompts_dir=pdir)
        ws_dir = work / "workspace"
        out.files = {f.path: f.role for f in ws.files}
        role = "grapher"
        graph = resume.load("graph.json", Graph)
        reached("graph", "resumed" if graph else "")
        if graph is None:
            graph = await build_graph(ws, ws_dir, client("grapher"), prompts_dir=pdir)
            resume.save("graph.json", graph)
        out.nodes_kept, out.nodes_dropped = len(graph.nodes), sum(1 for d in graph.dropped if "id" in d)
        if not graph.nodes:
            out.error, out.fault = "no fact survived the recoverability check", "model:grapher"
            return out
        role = "compiler"
        spec = resume.load("spec.v0.json", Spec)
        reached("spec", "resumed" if spec else "")
        if spec is None:
            spec = await compile_spec(ws, ws_dir, graph, client("compiler"), prompts_dir=pdir)
            resume.save("spec.v0.json", spec)
        reached("teacher", "first run")
        role = "teacher"
        teacher = TerminusAgent(client("teacher"), max_turns=settings.max_turns)
        task_dir = write_grounded_task(
            work / "task",
            ws,
            ws_dir,
            graph,
            spec,
            judge_threshold=settings.admission.threshold,
            environment=environment,
        )
        run = await run_teacher(task_dir, teacher, builder, work / "runs" / f"{statement_hash(spec)[:16]}-a0")
        if settings.revise:
            role = "reviser"
            revision = resume.load("revision.json", Revision)
            reached("revise", "resumed" if revision else "")
            if revision is None:
                revised, changed, notes = await revise(
                    ws, ws_dir, graph, spec, run, client("reviser"), prompts_dir=pdir
                )
                revision = Revision(changed=changed, notes=notes, spec=revised)
                resume.save("revision.json", revision)
            out.revised = revision.changed
            out.statement_changed = statement_hash(revision.spec) != statement_hash(spec)
            spec = revision.spec
            task_dir = write_grounded_task(
                work / "task",
                ws,
                ws_dir,
                graph,
                spec,
                judge_threshold=settings.admission.threshold,
                environment=environment,
            )
        (work / "spec.json").write_text(spec.model_dump_json(indent=1))
        h = statement_hash(spec)[:16]
        for attempt in range(settings.attempts):
            name = f"{h}-a{attempt}"
            done = resume.load(f"attempts/{name}.json", AttemptOutcome)
            if done is not None and (work / "runs" / name / "result.json").exists():
                reached("admission", f"attempt {attempt + 1}/{settings.attempts} resumed")
                out.attempts.append(done)
                continue
            reached("admission", f"attempt {attempt + 1}/{settings.attempts}: teacher")
            role = "teacher"
            run = await run_teacher(task_dir, teacher, builder, work / "runs" / name)
            role = "judge"
            reached("admission", f"attempt {attempt + 1}/{settings.attempts}: judge")
            decision = await admit(
                run,
                spec,
                graph,
                task_dir / "environment" / "workspace",
                client("judge"),
                policy=settings.admission,
                prompts_dir=pdir,
            )
            attempt_out = AttemptOutcome(attempt=attempt, run=str(run.folder), reused=run.reused, admission=decision)
            resume.save(f"attempts/{name}.json", attempt_out)
            out.attempts.append(attempt_out)
        admitted = [a for a in out.attempts if a.admission.admitted]
        if admitted:
            dest = store / "tasks" / task_name(seed)
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(task_dir, dest)
            best = max(admitted, key=lambda a: (a.admission.quality or 0.0, -a.attempt))
            add_reference_solution(dest, Path(best.run) / "deliverables")
            out.task = str(dest)
        out.stage = "done"
    except ModelReplyError as e:
        out.error, out.fault = str(e), f"model:{role}"
    except EndpointError as e:
        out.error, out.fault = str(e), f"endpoint:{role}"
    except AgentmillError as e:
        out.error, out.fault = str(e), "input"
    return out


SOLVE_SH = """#!/bin/bash
# Reference solution: the deliverables of the teacher's best admitted run.
mkdir -p /app/output
cp -r /solution/deliverables/. /app/output/
"""


def add_reference_solution(task_dir: Path, deliverables: Path) -> None:
    """solution/solve.sh restoring an admitted run's deliverables, so `agentmill check` can show
    the task is solvable (oracle passes the artifact checks) and not vacuous (nop fails them)."""
    sol = task_dir / "solution"
    shutil.rmtree(sol, ignore_errors=True)
    shutil.copytree(deliverables, sol / "deliverables", symlinks=False)
    (sol / "solve.sh").write_text(SOLVE_SH)
    (sol / "solve.sh").chmod(0o755)
