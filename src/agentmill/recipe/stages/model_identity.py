"""What identifies a model's answers in a cache key: its served name and sampling, never its URL or key."""

from __future__ import annotations

from agentmill.models.session import served_name
from agentmill.recipe.schema import ModelSpec


def model_identity(model: ModelSpec) -> dict:
    return {
        "model": served_name(model.name),
        "temperature": model.temperature,
        "top_p": model.top_p,
        "max_tokens": model.max_tokens,
    }
