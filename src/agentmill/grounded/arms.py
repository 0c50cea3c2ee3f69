"""Rejection-sampling data from the selection arms: for each admitted task of a store (a query),
k rollouts of the student model (deliverables kept), each scored by the anchored and the
unanchored judge, then `select_arms` picks one per query per arm. Writes
`<store>/arms/<arm>/trials/<id>/` (a rollout folder's layout: `agentmill export <store>/arms/<arm>`)
and `<store>/arms/arms.json` (every candidate's scores and each arm's picks)."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

from agentmill.agents.terminus import TerminusAgent
from agentmill.grounded.admission import ATTEMPTED, checks_passed
from agentmill.grounded.judge import judge, quality
from agentmill.grounded.roles import Roles
from agentmill.grounded.selection import Candidate, balance_queries, select_arms, task_pattern
from agentmill.grounded.source import load_grounded_tasks
from agentmill.grounded.task_folder import read_graph, read_spec
from agentmill.grounded.teacher import run_teacher
from agentmill.images import ImageBuilder


async def run_arms(
    store: Path,
    roles: Roles,
    *,
    k: int = 4,
    threshold: float = 0.95,
    seed: int = 0,
    max_turns: int = 50,
    builder: ImageBuilder | None = None,
    prompts_dir: Path | None = None,
    per_pattern: int | None = None,
) -> dict:
    """`per_pattern`: at most that many queries of each execution pattern (selection.balance_queries)."""
    builder = builder or ImageBuilder()
    tasks = load_grounded_tasks(store)
    if per_pattern is not None:
        tasks = balance_queries(tasks, per_pattern, seed=seed)
    student, judge_client = roles.client("student"), roles.client("judge")
    pool: dict[str, list[Candidate]] = {}
    try:
        agent = TerminusAgent(student, max_turns=max_turns)
        for task_dir in tasks:
            spec, graph = read_spec(task_dir), read_graph(task_dir)
            ws_dir = task_dir / "environment" / "workspace"
            cands = []
            for i in range(k):
                run = await run_teacher(task_dir, agent, builder, store / "arms" / "runs" / task_dir.name / f"s-a{i}")
                if run.result.outcome.value not in ATTEMPTED:
                    continue  # infra failures are no candidates
                scores = {}
                for mode in ("anchored", "unanchored"):
                    if not checks_passed(run.result):  # failed artifact checks: not admissible under any arm's judge
                        scores[mode] = 0.0
                        continue
                    v = await judge(
                        spec, graph, ws_dir, run.deliverables, judge_client, mode=mode, prompts_dir=prompts_dir
                    )
                    scores[mode] = quality(spec, v)
                cands.append(Candidate(run=str(run.folder), **scores))
            pool[task_dir.name] = cands
    finally:
        await student.close()
        await judge_client.close()
    arms = select_arms(pool, threshold=threshold, seed=seed)
    root = store / "arms"
    for arm, picks in arms.items():
        trials = root / arm / "trials"
        shutil.rmtree(trials, ignore_errors=True)
        trials.mkdir(parents=True)
        for query, folder in picks.items():
            shutil.copytree(folder, trials / f"{query}-{Path(folder).name}")
    summary = {
        "k": k,
        "threshold": threshold,
        "seed": seed,
        "per_pattern": per_pattern,
        "queries_by_pattern": dict(Counter(task_pattern(t) for t in tasks)),
        "pool": {q: [c.model_dump() for c in cs] for q, cs in pool.items()},
        "arms": arms,
    }
    (root / "arms.json").write_text(json.dumps(summary, indent=1))
    return summary
