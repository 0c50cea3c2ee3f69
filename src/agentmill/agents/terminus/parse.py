"""Parse the terminal agent's JSON reply. Anything unusable becomes a ReplyError whose message goes
back to the model."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from agentmill.errors import AgentError

MAX_DURATION = 60.0


class ReplyError(AgentError, ValueError):
    """The reply cannot be used; the message says why, to the model."""


@dataclass
class Command:
    keystrokes: str
    duration: float = 1.0


@dataclass
class Reply:
    analysis: str = ""
    plan: str = ""
    commands: list[Command] = field(default_factory=list)
    task_complete: bool = False
    warnings: list[str] = field(default_factory=list)


def parse_reply(text: str) -> Reply:
    obj = _first_json_object(text)
    if not isinstance(obj, dict):
        raise ReplyError("the answer must be a JSON object")
    reply = Reply(analysis=_text(obj.get("analysis", "")), plan=_text(obj.get("plan", "")))
    if "commands" not in obj:
        raise ReplyError('missing the "commands" list')
    commands = obj["commands"]
    if not isinstance(commands, list):
        raise ReplyError('"commands" must be a list')
    for i, cmd in enumerate(commands):
        if not isinstance(cmd, dict) or not isinstance(cmd.get("keystrokes"), str):
            raise ReplyError(f'commands[{i}] must be an object with a "keystrokes" string')
        duration = cmd.get("duration", 1.0)
        if isinstance(duration, bool) or not isinstance(duration, (int, float)):
            raise ReplyError(f"commands[{i}].duration must be a number of seconds")
        if duration > MAX_DURATION:
            reply.warnings.append(f"commands[{i}].duration {duration} capped at {MAX_DURATION:g}s")
        reply.commands.append(Command(cmd["keystrokes"], max(0.0, min(float(duration), MAX_DURATION))))
    complete = obj.get("task_complete", False)
    if isinstance(complete, str):
        complete = complete.strip().lower() == "true"
    reply.task_complete = bool(complete)
    return reply


def _text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _first_json_object(text: str):
    """The first complete JSON object in the text (models wrap JSON in prose or code fences)."""
    if not text or not text.strip():
        raise ReplyError("the answer was empty")
    decoder = json.JSONDecoder()
    start = text.find("{")
    last_error = "no JSON object found"
    while start != -1:
        try:
            obj, _ = decoder.raw_decode(text, start)
            return obj
        except json.JSONDecodeError as e:
            last_error = f"invalid JSON ({e.msg} at line {e.lineno} column {e.colno})"
        start = text.find("{", start + 1)
    raise ReplyError(last_error)
