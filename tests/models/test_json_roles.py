"""Which roles preflight asks for JSON: the ones whose replies are parsed as JSON objects, no others."""

from types import SimpleNamespace

from agentmill.grounded.roles import ROLE_NAMES, Endpoint, Roles, role_probes
from agentmill.recipe.preflight import replies_json


def test_ground_asks_every_role_but_its_agents_for_json():
    ep = Endpoint(base_url="http://127.0.0.1:9/v1", model="m")
    roles = Roles(**{r: ep for r in ROLE_NAMES if r not in ("pairwise", "student")})
    probes = {p.role: p.json for p in role_probes(roles, list(ROLE_NAMES), "ground.toml")}
    assert probes == {r: r not in ("teacher", "student") for r in ROLE_NAMES}


def test_recipe_stages_that_read_json_replies():
    augment = SimpleNamespace(kind="augment", spec=SimpleNamespace(judge=True))
    assert replies_json(augment)
    assert not replies_json(SimpleNamespace(kind="augment", spec=SimpleNamespace(judge=False)))  # rewrites are text
    assert replies_json(SimpleNamespace(kind="task_filter", name="askllm"))
    assert not replies_json(SimpleNamespace(kind="task_filter", name="response_length"))
    assert not replies_json(SimpleNamespace(kind="rollout", name="rollout"))  # the agent's replies
