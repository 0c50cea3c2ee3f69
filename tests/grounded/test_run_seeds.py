"""A ground run over many seeds: seeds in flight up to `concurrency`, outcomes in seed order, a
crash in one seed recorded (not raised) and retried on resume, finished seeds never run twice.
`ground_seed` is replaced where the run calls it: what crosses is the seed."""

import asyncio
import json

from agentmill.grounded import run as ground_run
from agentmill.grounded.pipeline import SeedOutcome
from agentmill.grounded.roles import ROLE_NAMES
from agentmill.grounded.run import GroundConfig, run_ground


def config(tmp_path, **kw):
    files = tmp_path / "files"
    files.mkdir(exist_ok=True)
    (files / "notes.md").write_text("# Quarterly notes\nRevenue grew in the north region.\n")
    endpoint = {"base_url": "http://127.0.0.1:9/v1", "model": "never-called"}
    return GroundConfig.model_validate(
        {
            "seeds": 5,
            "files": [str(files)],
            "corpus": False,
            "roles": {
                r: endpoint
                for r in ROLE_NAMES
                if r in {"assembler", "grapher", "compiler", "teacher", "reviser", "judge"}
            },
            **kw,
        }
    )


def fake_ground_seed(calls, peak, fail=frozenset()):
    live = {"n": 0}

    async def ground_seed(seed, *_args, **_kw):
        calls.append(seed.seed_id)
        live["n"] += 1
        peak.append(live["n"])
        await asyncio.sleep(0.05 if len(calls) % 2 else 0.01)  # finish out of order
        live["n"] -= 1
        if seed.seed_id in fail:
            raise RuntimeError("disk on fire")
        return SeedOutcome(seed_id=seed.seed_id, stage="done")

    return ground_seed


def test_seeds_run_concurrently_in_order_and_a_crash_is_recorded_then_retried(tmp_path, monkeypatch):
    cfg = config(tmp_path, concurrency=2)
    seeds = ground_run.choose_seeds(cfg)
    calls, peak = [], []
    monkeypatch.setattr(ground_run, "ground_seed", fake_ground_seed(calls, peak, fail={seeds[1].seed_id}))
    outcomes = asyncio.run(run_ground(cfg, tmp_path / "store"))
    assert [o.seed_id for o in outcomes] == [s.seed_id for s in seeds]  # seed order, not finishing order
    assert max(peak) == 2 and sorted(calls) == sorted(s.seed_id for s in seeds)
    crashed = outcomes[1]
    assert crashed.fault == "harness" and "disk on fire" in crashed.error
    assert [o.stage for o in outcomes].count("done") == 4
    results = tmp_path / "store" / "results"
    assert not (results / f"{seeds[1].seed_id}.json").exists()
    assert json.loads((tmp_path / "store" / "funnel.json").read_text())["seeds"] == 5

    calls.clear()
    monkeypatch.setattr(ground_run, "ground_seed", fake_ground_seed(calls, []))
    again = asyncio.run(run_ground(cfg, tmp_path / "store"))
    assert calls == [seeds[1].seed_id]  # only the crashed seed runs again; the rest are never paid twice
    assert all(o.stage == "done" for o in again)


def test_concurrency_one_runs_seeds_one_at_a_time(tmp_path, monkeypatch):
    calls, peak = [], []
    monkeypatch.setattr(ground_run, "ground_seed", fake_ground_seed(calls, peak))
    asyncio.run(run_ground(config(tmp_path, concurrency=1), tmp_path / "store"))
    assert max(peak) == 1 and len(calls) == 5
