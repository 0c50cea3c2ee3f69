"""Mixing quotas, top-N, sampling without replacement, upsampling; seeded and reproducible."""

from collections import Counter

import pytest

from agentmill.errors import AgentmillError
from agentmill.recipe.records import TaskEntry
from agentmill.recipe.schema import Mix
from agentmill.recipe.stages.mix import mix_tasks, quotas, rank_sources


def entries(source, n, weights=None):
    return [
        TaskEntry(
            name=f"{source}/t{i}",
            path=f"/x/{source}/{i}",
            source=source,
            content_hash=f"{source}{i}",
            instruction="i",
            weight=(weights[i] if weights else 1.0),
        )
        for i in range(n)
    ]


def test_quotas_split_the_budget():
    assert quotas(10, 4) == [3, 3, 2, 2]
    assert quotas(12, 3) == [4, 4, 4]
    assert sum(quotas(10_000, 7)) == 10_000


def test_top_n_and_budget_over_n():
    tasks = entries("a", 10) + entries("b", 10) + entries("c", 10)
    out, report = mix_tasks(tasks, Mix(top_n=2, budget=8), seed=1, order=["b", "a", "c"])
    assert Counter(t.source for t in out) == {"b": 4, "a": 4}
    assert len({t.name for t in out}) == 8  # without replacement
    reasons = report.reasons()
    assert reasons["source 'c' not in the top 2"] == 10
    assert report.count_in == 30 and report.count_out == 8


def test_seeded_and_reproducible():
    tasks = entries("a", 50) + entries("b", 50)
    one, _ = mix_tasks(tasks, Mix(budget=20), seed=3, order=["a", "b"])
    two, _ = mix_tasks(tasks, Mix(budget=20), seed=3, order=["a", "b"])
    other, _ = mix_tasks(tasks, Mix(budget=20), seed=4, order=["a", "b"])
    assert [t.name for t in one] == [t.name for t in two]
    assert [t.name for t in one] != [t.name for t in other]


def test_upsampling_by_cycling_copies():
    tasks = entries("a", 3) + entries("b", 10)
    out, report = mix_tasks(tasks, Mix(budget=16, upsample="cycle"), seed=0, order=["a", "b"])
    a = [t for t in out if t.source == "a"]
    assert len(a) == 8 and len({t.name for t in a}) == 8
    base = Counter(t.name.split("#")[0] for t in a)
    assert sorted(base.values()) == [2, 3, 3]  # cycled evenly: 3 originals + 5 copies
    assert all("#copy" in t.name for t in a[3:])
    assert any("upsampled 3 tasks to 8" in n for n in report.notes)


def test_upsampling_by_weights():
    tasks = entries("a", 2, weights=[0.01, 100.0]) + entries("b", 10)
    out, _ = mix_tasks(tasks, Mix(budget=40, upsample="weights"), seed=0, order=["a", "b"])
    copies = Counter(t.name.split("#")[0] for t in out if t.source == "a" and "#copy" in t.name)
    assert copies["a/t1"] >= 16 and copies["a/t0"] <= 2


def test_no_upsampling_keeps_what_there_is():
    out, report = mix_tasks(
        entries("a", 2) + entries("b", 9), Mix(budget=10, upsample="none"), seed=0, order=["a", "b"]
    )
    assert Counter(t.source for t in out) == {"a": 2, "b": 5}
    assert any("not upsampled" in n for n in report.notes)


def test_ranking_given_by_scores_or_list():
    tasks = entries("a", 1) + entries("b", 1) + entries("c", 1)
    assert rank_sources(tasks, Mix(), {"a": 0.1, "b": 0.9, "c": None}, None) == ["b", "a", "c"]
    assert rank_sources(tasks, Mix(ranking=["c"]), {}, None) == ["c", "a", "b"]
    with pytest.raises(AgentmillError, match="unknown"):
        rank_sources(tasks, Mix(ranking=["zzz"]), {}, None)
