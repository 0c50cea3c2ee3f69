"""Reading a ground store's own files (and the user's seeds file) back: one clear error naming the
file, the line and the problem, never a traceback out of the middle of a run or a report."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from agentmill.errors import AgentmillError
from agentmill.grounded.patterns import PATTERN_NAMES
from agentmill.grounded.records import Seed

T = TypeVar("T", bound=BaseModel)
SEED_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,80}$")  # it names folders and files in the store


def _why(e: ValidationError) -> str:
    err = e.errors()[0]
    where = ".".join(map(str, err["loc"]))
    return f"field '{where}': {err['msg']}" if where else err["msg"]


def read_record(path: Path, model: type[T], *, hint: str = "") -> T:
    try:
        return model.model_validate_json(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise AgentmillError(f"{path}: cannot read: {e}{hint}") from None
    except ValidationError as e:
        raise AgentmillError(f"{path}: corrupted or not a {model.__name__}: {_why(e)}{hint}") from None


def read_seeds(path: Path) -> list[Seed]:
    """Seeds as JSON lines (`ground seeds --json` output, possibly edited): blank lines skipped,
    seed ids unique."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise AgentmillError(f"{path}: cannot read: {e}") from None
    seeds: list[Seed] = []
    seen: set[str] = set()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            seed = Seed.model_validate_json(line)
        except ValidationError as e:
            raise AgentmillError(f"{path}:{n}: not a seed: {_why(e)}") from None
        if not SEED_ID.match(seed.seed_id):
            raise AgentmillError(f"{path}:{n}: seed_id {seed.seed_id!r} is not a plain name (letters, digits, . _ -)")
        if seed.pattern not in PATTERN_NAMES:
            raise AgentmillError(f"{path}:{n}: pattern {seed.pattern!r} is unknown (known: {', '.join(PATTERN_NAMES)})")
        if seed.seed_id in seen:
            raise AgentmillError(f"{path}:{n}: seed_id '{seed.seed_id}' appears twice")
        seen.add(seed.seed_id)
        seeds.append(seed)
    if not seeds:
        raise AgentmillError(f"{path}: no seeds in the file")
    return seeds
