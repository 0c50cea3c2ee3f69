"""Editable prompt files (synth/prompts/*.md), overridable by a folder named in the config."""

from __future__ import annotations

from pathlib import Path

from agentmill.errors import AgentmillError

BUNDLED = Path(__file__).resolve().parent / "prompts"


def load_prompt(name: str, override: Path | None = None) -> str:
    for folder in ([override] if override else []) + [BUNDLED]:
        path = folder / f"{name}.md"
        if path.is_file():
            return path.read_text()
    raise AgentmillError(f"{BUNDLED / (name + '.md')}: prompt file missing")
