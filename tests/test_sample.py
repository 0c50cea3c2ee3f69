"""The bundled sample dataset: oracle reaches 1 and nop does not, on every task, in CI."""

import asyncio
from collections import Counter

from agentmill.rollout.check import check_tasks
from agentmill.tasks import load_dataset, sample_dataset_path
from tests.conftest import sandbox


def test_sample_dataset_loads_cleanly():
    ds = load_dataset(sample_dataset_path())
    assert ds.errors == []
    assert ds.warnings == []
    assert len(ds.tasks) >= 24
    kinds = Counter(t.config.metadata.get("category") for t in ds.tasks)
    assert len(kinds) >= 6, kinds
    assert len({t.content_hash for t in ds.tasks}) == len(ds.tasks)


@sandbox
def test_every_sample_task_oracle_passes_and_nop_fails(builder):
    ds = load_dataset(sample_dataset_path())
    results = asyncio.run(check_tasks(ds.tasks, concurrency=4, builder=builder))
    bad = {r.task.name: (r.verdict, r.reason) for r in results if r.verdict != "ok"}
    assert bad == {}
    for r in results:
        assert r.oracle.reward == 1.0
        assert r.nop.reward is not None and r.nop.reward < 1.0
