"""Asking a role's model for a JSON object: one request, the reply text kept, never a crash on prose."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agentmill.models.client import EndpointError, ModelClient
from agentmill.synth.candidate import CandidateParseError, _json_object


@dataclass
class JsonReply:
    data: Any  # None when the reply did not parse
    text: str
    error: str | None = None  # parse error, or the endpoint's failure
    endpoint_failed: bool = False


async def ask_json(client: ModelClient, system: str, user: str) -> JsonReply:
    try:
        reply = await client.chat([{"role": "system", "content": system}, {"role": "user", "content": user}])
    except EndpointError as e:
        return JsonReply(None, "", f"endpoint failed: {e}", endpoint_failed=True)
    try:
        return JsonReply(_json_object(reply.content), reply.content)
    except CandidateParseError as e:
        return JsonReply(None, reply.content, str(e))


def dumps(value: Any) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False, default=str)
