"""Editable prompt files, one per model role. `{{name}}` marks a value filled in at run time;
pass `prompts_dir` to use your own copies (same file names)."""

from __future__ import annotations

import re
from pathlib import Path

from agentmill.errors import AgentmillError

HERE = Path(__file__).parent


def render(name: str, prompts_dir: Path | None = None, **values: str) -> str:
    path = Path(prompts_dir or HERE) / f"{name}.md"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise AgentmillError(f"prompt {path}: {e.strerror}") from None
    # one pass: a value is never scanned again, so a deliverable that contains `{{b}}` stays text
    return re.sub(r"\{\{(\w+)\}\}", lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), text)
