"""The endpoints a recipe run will call, for `models.preflight`: those of the stages still to run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentmill.agents import agent_class
from agentmill.models.local import LOCAL_MODEL
from agentmill.models.preflight import Probe
from agentmill.models.session import served_name
from agentmill.recipe.schema import ModelSpec

if TYPE_CHECKING:
    from agentmill.agents.base import Agent


def recipe_probes(plan, where: str = "the recipe") -> list[Probe]:
    """One probe per stage that is not cached and calls a model served at a base_url."""
    probes = []
    for step in plan:
        spec = getattr(step.obj, "model", None)
        if step.cached or not isinstance(spec, ModelSpec) or spec.name == LOCAL_MODEL or not spec.base_url:
            continue
        tools = False
        if step.obj.kind == "rollout":
            cls: type[Agent] = agent_class(step.obj.recipe.rollout.agent)
            if not cls.needs_model:
                continue
            tools = getattr(cls, "rendering", None) == "tool_calls"
        probes.append(
            Probe(
                role=f"stage {step.stage}",
                base_url=spec.base_url,
                model=served_name(spec.name),
                api_key_env=spec.api_key_env,
                key_hint=f"api_key_env of this stage's model in {where}",
                tools=tools,
                json=replies_json(step.obj),
            )
        )
    return probes


def replies_json(stage) -> bool:
    """Whether the stage parses its model's replies as JSON: augment's judge (recipe/stages/meaning.py)
    and the askllm filter (a verdict schema)."""
    if stage.kind == "augment":
        return bool(stage.spec.judge)
    return stage.kind == "task_filter" and stage.name == "askllm"
