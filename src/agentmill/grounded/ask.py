"""Ask a model for one JSON object and validate it into a record; a reply that does not parse or
validate goes back to the model with the error, a bounded number of times."""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agentmill.errors import AgentmillError
from agentmill.models import ModelClient

T = TypeVar("T", bound=BaseModel)


class ModelReplyError(AgentmillError):
    """A model role kept answering with something unusable: the model's fault, not the input's."""


def parse_json(text: str) -> Any:
    text = text.strip()
    fence = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    if fence:
        text = fence.group(1).strip()
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        raise ValueError("no JSON object in the reply")
    obj, _ = json.JSONDecoder().raw_decode(text[start:])
    return obj


def parse_strict_json(text: str) -> Any:
    """A judge's reply: exactly one JSON object (a ```json wrapper allowed), no text around it. Prose
    around an object, or two objects, is off the schema: a verdict is never picked out of a mixture
    (it could be one the judge quoted from the worker's deliverables)."""
    body = text.strip()
    wrapped = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", body, re.DOTALL)
    obj = json.loads(wrapped.group(1) if wrapped else body)  # ValueError when anything surrounds the object
    if not isinstance(obj, dict):
        raise ValueError("the reply must be one JSON object")
    return obj


async def ask_json(
    client: ModelClient,
    messages: list[dict],
    model: type[T],
    *,
    role: str,
    repairs: int = 2,
    check=None,
    strict: bool = False,
) -> T:
    """`check(record)` may raise ValueError with a message for the model (a semantic problem).
    `strict` (judges): the reply must be the JSON object alone (`parse_strict_json`)."""
    parse = parse_strict_json if strict else parse_json
    messages = list(messages)
    last = ""
    for _ in range(repairs + 1):
        reply = await client.chat(messages)
        try:
            record = model.model_validate(parse(reply.content))
            if check is not None:
                check(record)
            return record
        except (ValueError, ValidationError) as e:
            last = str(e).splitlines()[0][:300] if not isinstance(e, ValidationError) else _brief(e)
            messages += [
                {"role": "assistant", "content": reply.content},
                {
                    "role": "user",
                    "content": f"That reply could not be used: {last}\nAnswer again with one JSON object.",
                },
            ]
    raise ModelReplyError(f"{role}: no usable reply after {repairs + 1} tries: {last}")


def _brief(e: ValidationError) -> str:
    err = e.errors()[0]
    return f"field '{'.'.join(map(str, err['loc']))}': {err['msg']}"
