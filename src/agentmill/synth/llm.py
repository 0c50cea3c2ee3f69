"""Asking a role's model for a JSON object: one request, the reply text kept, never a crash on prose."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agentmill.models.client import ContextExceededError, EndpointError, ModelClient
from agentmill.synth.candidate import CandidateParseError, _json_object


@dataclass
class JsonReply:
    data: Any  # None when the reply did not parse
    text: str
    error: str | None = None  # parse error, or the endpoint's failure
    endpoint_failed: bool = False  # down past the client's retries: worth a pause and another try
    context_exceeded: bool = False  # the request does not fit the model: another try would fail the same way


async def ask_json(client: ModelClient, system: str, user: str, schema: dict | None = None) -> JsonReply:
    """`schema`: asked for as constrained decoding where the endpoint supports it; the reply is parsed anyway."""
    try:
        reply = await client.chat(
            [{"role": "system", "content": system}, {"role": "user", "content": user}], json_schema=schema
        )
    except EndpointError as e:
        return JsonReply(None, "", f"endpoint failed: {e}", endpoint_failed=True)
    except ContextExceededError as e:
        return JsonReply(None, "", f"context exceeded: {e}", context_exceeded=True)
    try:
        return JsonReply(_json_object(reply.content), reply.content)
    except CandidateParseError as e:
        return JsonReply(None, reply.content, str(e))


def dumps(value: Any) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False, default=str)
