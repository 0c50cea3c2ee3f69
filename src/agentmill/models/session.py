"""Open a model for the length of a job: a client for an endpoint, or the embedded model started
on loopback and stopped afterwards."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from agentmill.errors import AgentmillError
from agentmill.models.client import ModelClient, Prices, SamplingParams
from agentmill.models.local import LOCAL_MODEL, SERVED_NAME, LocalModelServer


def served_name(name: str) -> str:
    """The model name trials are identified by: the embedded model's real name, not 'local'."""
    return SERVED_NAME if name == LOCAL_MODEL else name


@asynccontextmanager
async def open_model(
    name: str,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    sampling: SamplingParams | None = None,
    timeout: float = 600.0,
    max_retries: int = 6,
    concurrency: int = 64,
    prices: Prices | None = None,
    say: Callable[[str], None] | None = None,
) -> AsyncIterator[ModelClient]:
    server = None
    if name == LOCAL_MODEL:
        if say:
            say("starting the embedded model (SmolLM2-135M: a smoke-test model, not a teacher)")
        server = LocalModelServer()
        base_url = await server.__aenter__()
    elif base_url is None:  # an endpoint's model needs its address (the recipe and the CLI check it too)
        raise AgentmillError(f"model '{name}' needs base_url (or use the model '{LOCAL_MODEL}')")
    try:
        client = ModelClient.from_env(
            base_url=base_url,
            model=served_name(name),
            api_key_env=api_key_env,
            sampling=sampling,
            timeout=timeout,
            max_retries=max_retries,
            max_concurrency=concurrency,
            prices=prices,
        )
        try:
            yield client
        finally:
            await client.close()
    finally:
        if server is not None:
            await server.__aexit__(None, None, None)
