"""The roles' model clients for one synthesis run. Roles with `model = "local"` share one embedded
SmolLM2 server (models/local.py), started on loopback for the run and stopped after it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from agentmill.models.client import ModelClient
from agentmill.models.local import LocalModelServer
from agentmill.synth.config import SynthConfig


@asynccontextmanager
async def open_role_clients(config: SynthConfig, on_event=None) -> AsyncIterator[dict[str, ModelClient]]:
    """{role: client}; the caller reads their usage before the block ends (they are closed after)."""
    server = LocalModelServer() if any(rc.is_local for rc in config.roles.values()) else None
    local_url = None
    try:
        if server is not None:
            if callable(on_event):
                on_event("local_model", roles=sorted(r for r, rc in config.roles.items() if rc.is_local))
            # inside the try: a run stopped while the server is still starting stops it too
            local_url = await server.__aenter__()
        clients = {role: rc.client(local_url, role) for role, rc in config.roles.items()}
        try:
            yield clients
        finally:
            for c in clients.values():
                await c.close()
    finally:
        if server is not None:
            server.stop()  # not in a thread: this also runs while the run is being cancelled


TOOL_ROLES = ("target", "solver")  # they play tool tasks through function calling
JSON_ROLES = ("generator", "critic", "judge", "card_writer")  # every reply is parsed as a JSON object (synth/llm.py)


def role_probes(config: SynthConfig, where: str) -> list:
    """The roles' endpoints for `models.preflight` (the embedded model is ours to start: not probed)."""
    from agentmill.models.preflight import Probe
    from agentmill.models.session import served_name

    return [
        Probe(
            role=role,
            base_url=rc.base_url,
            model=served_name(rc.model),
            api_key_env=rc.api_key_env,
            key_hint=f"[roles.{role}] api_key_env in {where}",
            tools=role in TOOL_ROLES,
            json=role in JSON_ROLES,
        )
        for role, rc in sorted(config.roles.items())
        if not rc.is_local and rc.base_url
    ]
