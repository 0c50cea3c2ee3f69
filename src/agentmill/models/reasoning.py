"""Keep a model's reasoning apart from its answer.

Endpoints report reasoning either in a separate `reasoning_content` field (vLLM, SGLang, DeepSeek)
or inline as `<think>...</think>` in the text (Qwen3 and most open reasoning models). Chat
templates that open the think block in the prompt leave only the closing tag in the reply: the
orphan `</think>` case.
"""

from __future__ import annotations

import re

_BLOCK = re.compile(r"<think>(.*?)</think>", re.DOTALL)


def split_reasoning(text: str | None, reasoning_field: str | None = None) -> tuple[str, str | None]:
    """(answer, reasoning or None)."""
    text = text or ""
    parts: list[str] = [reasoning_field.strip()] if reasoning_field and reasoning_field.strip() else []
    if "</think>" in text and "<think>" not in text.split("</think>", 1)[0]:
        head, text = text.split("</think>", 1)  # orphan closing tag: everything before it is reasoning
        if head.strip():
            parts.append(head.strip())
    for m in _BLOCK.finditer(text):
        if m.group(1).strip():
            parts.append(m.group(1).strip())
    text = _BLOCK.sub("", text)
    if "<think>" in text:  # opened but never closed (truncated reply): the rest is reasoning
        text, tail = text.split("<think>", 1)
        if tail.strip():
            parts.append(tail.strip())
    return text.strip(), ("\n\n".join(parts) if parts else None)
