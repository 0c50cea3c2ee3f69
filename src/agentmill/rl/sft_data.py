"""Exported `trl` rows -> token ids with labels on the assistant's tokens only.

A row is the teacher's conversation (agentmill export --format trl). Only what the assistant wrote
is trained: its text, its tool calls and the end-of-turn token; system prompts, task text,
terminal output and tool results are context (label -100). A conversation never ends on an
unanswered turn in training: exported rows already end on the model's reply, and any trailing
user or tool message (rows from elsewhere) is dropped before tokenising, never trained on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agentmill.errors import AgentmillError

IGNORE = -100  # the label the loss skips (transformers' and TRL's convention)


@dataclass
class Tokenized:
    input_ids: list[int]
    assistant_masks: list[int]  # 1 where the assistant wrote the token

    @property
    def labels(self) -> list[int]:
        return [t if m else IGNORE for t, m in zip(self.input_ids, self.assistant_masks)]

    def as_row(self) -> dict[str, list[int]]:
        return {"input_ids": self.input_ids, "assistant_masks": self.assistant_masks, "labels": self.labels}


@dataclass
class Prepared:
    rows: list[dict[str, list[int]]] = field(default_factory=list)
    trimmed: int = 0  # conversations that ended on an unanswered turn (dropped turns)
    skipped: list[str] = field(default_factory=list)  # one line per row left out, and why


def trainable_messages(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """(messages ending on the assistant's turn, how many trailing messages were dropped)."""
    end = len(messages)
    while end and messages[end - 1].get("role") != "assistant":
        end -= 1
    return list(messages[:end]), len(messages) - end


def row_conversation(row: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict] | None]:
    """A `trl` row's messages and tools (tools are JSON text in agentmill's rows)."""
    messages = row.get("messages")
    if not isinstance(messages, list):
        raise AgentmillError("the row has no `messages` list (is it a `trl` export?)")
    tools = row.get("tools")
    if isinstance(tools, str):
        tools = json.loads(tools) if tools.strip() else None
    return messages, tools or None


def tokenize_conversation(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict] | None = None) -> Tokenized:
    """Tokenise through the chat template; the assistant mask comes from its generation markers."""
    out = tokenizer.apply_chat_template(
        messages, tools=tools, tokenize=True, return_dict=True, return_assistant_tokens_mask=True
    )
    ids, mask = list(out["input_ids"]), list(out["assistant_masks"])
    if not any(mask):
        raise AgentmillError("the chat template marked no assistant token (no {% generation %} block rendered)")
    return Tokenized(ids, mask)


def prepare_rows(rows: list[dict[str, Any]], tokenizer: Any, *, max_length: int | None = None) -> Prepared:
    """Tokenise every row; a row that cannot be used is reported and skipped, never cut mid-turn."""
    prepared = Prepared()
    for i, row in enumerate(rows):
        try:
            messages, tools = row_conversation(row)
            messages, dropped = trainable_messages(messages)
            if not any(m.get("role") == "assistant" for m in messages):
                raise AgentmillError("no assistant turn to train on")
            tok = tokenize_conversation(tokenizer, messages, tools)
        except (AgentmillError, ValueError, TypeError, KeyError) as e:
            prepared.skipped.append(f"row {i}: {e}")
            continue
        if max_length is not None and len(tok.input_ids) > max_length:
            prepared.skipped.append(f"row {i}: {len(tok.input_ids)} tokens, over --max-length {max_length}")
            continue
        prepared.trimmed += dropped > 0
        prepared.rows.append(tok.as_row())
    return prepared
