"""A misspelt recipe key is named with the key it was probably meant to be, wherever it stands."""

import pytest

from agentmill.errors import AgentmillError
from agentmill.recipe.schema import parse_recipe

BASE = {"recipe": {"name": "x"}, "sources": [{"name": "a", "sample": True}]}


@pytest.mark.parametrize(
    "patch, expected",
    [
        (
            {"rollout": {"agnet": "oracle"}},
            "r.toml: rollout.agnet: Extra inputs are not permitted (did you mean: agent?)",
        ),
        ({"recipe": {"name": "x", "sed": 1}}, "recipe.sed: Extra inputs are not permitted (did you mean: seed?)"),
        (
            {"sources": [{"name": "a", "sample": True, "pth": "d"}]},
            "sources.0.pth: Extra inputs are not permitted (did you mean: path?)",
        ),
        (
            {"trace_filter": {}},
            "trace_filter: Extra inputs are not permitted (did you mean: trace_filters, task_filters?)",
        ),
        (
            {"mix": {"zzz": 1}},
            "mix.zzz: Extra inputs are not permitted (known keys: budget, ranking, ranking_table, top_n, upsample)",
        ),
    ],
)
def test_an_unknown_key_gets_did_you_mean(patch, expected):
    with pytest.raises(AgentmillError) as e:
        parse_recipe({**BASE, **patch}, where="r.toml")
    assert expected in str(e.value)


def test_the_right_keys_parse():
    recipe = parse_recipe({**BASE, "rollout": {"agent": "oracle"}, "recipe": {"name": "x", "seed": 2}}, where="r.toml")
    assert recipe.rollout.agent == "oracle" and recipe.recipe.seed == 2
