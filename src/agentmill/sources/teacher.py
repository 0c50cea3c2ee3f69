"""The teacher endpoint a generator uses (`--model/--base-url/--api-key-env`, or a source's
`params.model = { name, base_url, api_key_env }`), checked once before any work by the same
preflight request every model-using command sends (models/preflight.py): a dead endpoint is one
clear error (exit 2), not a run of failed candidates."""

from __future__ import annotations

from typing import Any

from agentmill.errors import AgentmillError
from agentmill.models.preflight import Probe, preflight
from agentmill.sources.folders import run_sync


def teacher_spec(value: Any, where: str) -> dict[str, Any] | None:
    """A source's `params.model` as {name, base_url, api_key_env}; one clear error when malformed."""
    if value is None:
        return None
    if not isinstance(value, dict) or not value.get("name") or not value.get("base_url"):
        raise AgentmillError(f"{where}: params.model needs name and base_url (the teacher endpoint)")
    unknown = set(value) - {"name", "base_url", "api_key_env"}
    if unknown:
        raise AgentmillError(f"{where}: params.model: unknown key(s) {', '.join(sorted(unknown))}")
    return {"name": value["name"], "base_url": value["base_url"], "api_key_env": value.get("api_key_env")}


def check_teacher(teacher: dict[str, Any] | None, *, role: str = "teacher", key_hint: str = "--api-key-env") -> None:
    """Preflight the teacher's endpoint (one one-token request); raises PreflightError naming the cause."""
    if teacher:
        probe = Probe(role, teacher["base_url"], teacher["name"], teacher.get("api_key_env"), key_hint=key_hint)
        run_sync(preflight([probe]))
