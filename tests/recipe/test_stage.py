"""Adding a stage is one function plus one registration: a task filter written here runs in a real
recipe (nop agent), shows in the plan and the funnel with its reasons, and its params are checked
before anything runs."""

import asyncio

import pytest

from agentmill.errors import AgentmillError
from agentmill.recipe.pipeline import Pipeline
from agentmill.recipe.records import Drop
from agentmill.recipe.schema import parse_recipe
from agentmill.recipe.stages.task_filters import register_task_filter
from agentmill.recipe.stages.task_filters.base import FilterParams, parse_params, report
from tests.conftest import sandbox


class Params(FilterParams):
    keep: int = 1


def check(params: dict) -> Params:
    return parse_params("keep_first_n", Params, params)


async def keep_first_n(tasks, params, ctx):
    p = check(params)
    kept = tasks[: p.keep]
    dropped = [Drop(name=t.name, reason=f"not among the first {p.keep}") for t in tasks[p.keep :]]
    return kept, report("keep_first_n", tasks, kept, dropped)


register_task_filter("keep_first_n", keep_first_n, check)


def recipe(params: str) -> dict:
    import tomllib

    return tomllib.loads(f"""
[[sources]]
name = "s"
sample = true
tasks = ["ini-to-env-file", "extract-email-addresses", "errors-per-hour"]

[[task_filters]]
kind = "keep_first_n"
params = {params}

[rollout]
agent = "nop"

[trace_filters]
min_turns = 0

[[exports]]
format = "rl"
file = "rl.jsonl"
""")


def test_a_registered_filter_is_validated_at_planning(tmp_path):
    with pytest.raises(AgentmillError, match="task_filters.0: task filter 'keep_first_n': param 'kepe': unknown param"):
        Pipeline(parse_recipe(recipe("{ kepe = 2 }"), where="r"), {}, tmp_path / "run")
    assert not (tmp_path / "run").exists()


@sandbox
def test_a_registered_filter_runs_in_a_recipe(tmp_path):
    data = recipe("{ keep = 2 }")
    pipeline = Pipeline(parse_recipe(data, where="r"), data, tmp_path / "run")
    assert [p.stage for p in pipeline.plan()][:2] == ["sources", "filter0-keep_first_n"]
    reports = {r.stage: r for r in asyncio.run(pipeline.run())}
    step = reports["filter0-keep_first_n"]
    assert (step.kind, step.count_in, step.count_out) == ("task_filter", 3, 2)
    assert step.reasons() == {"not among the first 2": 1}
    assert reports["rollout"].count_in == 2 and reports["export-rl"].count_out == 2


def _scoped_recipe(filter_keys: str) -> dict:
    import tomllib

    return tomllib.loads(f"""
[[sources]]
name = "a"
sample = true
tasks = ["ini-to-env-file", "extract-email-addresses"]
[[sources]]
name = "b"
sample = true
tasks = ["errors-per-hour", "top-word-frequencies"]
[[task_filters]]
kind = "keep_first_n"
params = {{ keep = 1 }}
{filter_keys}
[rollout]
agent = "nop"
""")


def _kept(filter_keys: str, tmp_path) -> list[str]:
    from agentmill.recipe.records import StageReport, TaskEntry
    from agentmill.recipe.stage import StageContext, aiter_of

    r = parse_recipe(_scoped_recipe(filter_keys), where="r")
    stage = [s for s in Pipeline(r, {}, tmp_path / "run").stages if s.kind == "task_filter"][0]
    tasks = [
        TaskEntry(name=n, path="/x", source=src, content_hash=n, instruction=n)
        for src, n in [("a", "a1"), ("a", "a2"), ("b", "b1"), ("b", "b2")]
    ]
    ctx = StageContext(out=tmp_path, report=StageReport(stage=stage.step, kind="task_filter", count_in=4))

    async def go():
        return [t.name async for t in stage.run(aiter_of(tasks), ctx)]

    return asyncio.run(go())


def test_a_filter_scoped_to_sources_and_per_source(tmp_path):
    """The paper's per-source cuts: a global top-k empties a source; per_source keeps k of each; sources
    limits a filter to the named sources and leaves the others untouched, in place."""
    assert _kept("", tmp_path) == ["a1"]  # one global cut: source b is gone
    assert _kept("per_source = true", tmp_path) == ["a1", "b1"]
    assert _kept('sources = ["b"]', tmp_path) == ["a1", "a2", "b1"]
    with pytest.raises(AgentmillError, match="task_filters.0.sources: no source named 'c'"):
        parse_recipe(_scoped_recipe('sources = ["c"]'), where="r")


def test_a_filter_placed_after_the_mix_runs_on_the_mixed_set(tmp_path):
    before = Pipeline(parse_recipe(_scoped_recipe(""), where="r"), {}, tmp_path / "r1")
    after = Pipeline(parse_recipe(_scoped_recipe('placement = "after_mix"'), where="r"), {}, tmp_path / "r2")
    assert [p.stage for p in before.plan()][:3] == ["sources", "filter0-keep_first_n", "mix"]
    assert [p.stage for p in after.plan()][:3] == ["sources", "mix", "filter0-keep_first_n"]
