"""The matched token-budget control: an export keeps a seeded sample of traces within a token budget, so
two variants compare at the same number of training tokens."""

import asyncio
import json
import tomllib

from agentmill.recipe.pipeline import Pipeline
from agentmill.recipe.schema import parse_recipe
from agentmill.traces.tokens import TokenCounter
from tests.conftest import sandbox

TASKS = ["ini-to-env-file", "extract-email-addresses", "errors-per-hour", "top-word-frequencies"]


def recipe(budget: str, seed: int = 3) -> dict:
    return tomllib.loads(f"""
[recipe]
seed = {seed}
[[sources]]
name = "s"
sample = true
tasks = {json.dumps(TASKS)}
[rollout]
agent = "oracle"
[trace_filters]
min_turns = 1
[[exports]]
format = "trl"
file = "trl.jsonl"
{budget}
""")


def rows(tmp_path, name: str, budget: str, seed: int = 3) -> list[dict]:
    data = recipe(budget, seed)
    out = tmp_path / name
    asyncio.run(Pipeline(parse_recipe(data, where="r"), data, out, cache_dir=tmp_path / "cache").run())
    return [json.loads(line) for line in (out / "exports" / "trl.jsonl").read_text().splitlines()]


@sandbox
def test_an_export_stops_at_its_token_budget(tmp_path):
    whole = rows(tmp_path, "whole", "")
    sizes = sorted(TokenCounter().count(r["messages"]) for r in whole)
    assert len(whole) == 4
    budget = sizes[0] + sizes[1]  # room for two of the smaller traces, never all four
    first = rows(tmp_path, "first", f"token_budget = {budget}")
    again = rows(tmp_path, "again", f"token_budget = {budget}")
    assert 1 <= len(first) < 4 and sum(TokenCounter().count(r["messages"]) for r in first) <= budget
    assert first == again  # seeded: the same sample
    other = [rows(tmp_path, f"seed{s}", f"token_budget = {budget}", seed=s) for s in (11, 12, 13)]
    assert any(o != first for o in other)  # the sample follows the recipe's seed, not the rollout's order
