"""Two of the paper's bookkeeping steps: queries balanced per execution pattern before the arms are
compared, and greedy coverage re-applied to the admitted tasks' *real* input and output file
families (coverage.json), not the families the seeds expected."""

import asyncio
import json
from collections import Counter

from agentmill.grounded import run as ground_run
from agentmill.grounded.pipeline import SeedOutcome
from agentmill.grounded.run import run_ground
from agentmill.grounded.selection import balance_queries, task_pattern
from agentmill.tasks import TaskConfig, write_task
from tests.grounded.test_run_seeds import config


def task(root, name, pattern):
    cfg = TaskConfig.model_validate({"metadata": {"source": "grounded", "pattern": pattern}})
    return write_task(root / name, instruction="-", config=cfg, test_sh="#!/bin/bash\ntrue\n")


def test_at_most_n_queries_per_pattern_seeded(tmp_path):
    dirs = [task(tmp_path, f"a{i}", "audit and reconciliation") for i in range(7)]
    dirs += [task(tmp_path, f"b{i}", "document drafting and editing") for i in range(2)]
    kept = balance_queries(dirs, 3, seed=1)
    assert Counter(task_pattern(d) for d in kept) == {"audit and reconciliation": 3, "document drafting and editing": 2}
    assert kept == [d for d in dirs if d in kept]  # input order
    assert balance_queries(dirs, 3, seed=1) == kept and balance_queries(dirs, 3, seed=2) != kept
    assert balance_queries(dirs, 10) == dirs


def test_coverage_is_reapplied_to_the_real_families(tmp_path, monkeypatch):
    """Three admitted tasks: the second repeats the first's real input and output families (so it
    adds no coverage and is left out), the third reads two new families and writes a third (most
    coverage: first). Planted (the seeds' expected families used instead), this fails."""
    real = {}  # seed id -> (input files, deliverable paths)
    layouts = [(["a.xlsx"], ["out.xlsx"]), (["b.xlsx"], ["out.xlsx"]), (["c.pdf", "d.json"], ["memo.docx"])]

    async def ground_seed(seed, _sources, _roles, store, *_args, **_kw):
        files, outputs = layouts[len(real)]
        real[seed.seed_id] = (files, outputs)
        dest = store / "tasks" / seed.seed_id
        (dest / "tests").mkdir(parents=True)
        spec = {
            "statement": "s",
            "deliverables": [{"path": p, "format": p.rsplit(".", 1)[1]} for p in outputs],
            "criteria": [
                {
                    "id": "c",
                    "artifact": outputs[0],
                    "requirement": "r",
                    "expected": "1",
                    "weight": 1,
                    "anchors": ["n"],
                    "verification": "v",
                }
            ],
        }
        (dest / "tests" / "spec.json").write_text(json.dumps(spec))
        return SeedOutcome(seed_id=seed.seed_id, stage="done", files={f: "core" for f in files}, task=str(dest))

    monkeypatch.setattr(ground_run, "ground_seed", ground_seed)
    cfg = config(tmp_path, seeds=3, concurrency=1)
    seeds = ground_run.choose_seeds(cfg)
    # the same occupation, task type and pattern for all three: only the real families can differ
    same = [
        s.model_copy(
            update={
                "occupation_code": seeds[0].occupation_code,
                "evidence": seeds[0].evidence,
                "pattern": seeds[0].pattern,
            }
        )
        for s in seeds
    ]
    store = tmp_path / "store"
    asyncio.run(run_ground(cfg, store, seeds=same))
    order = [p.rsplit("/", 1)[-1] for p in json.loads((store / "coverage.json").read_text())]
    assert order == [same[2].seed_id, same[0].seed_id]
