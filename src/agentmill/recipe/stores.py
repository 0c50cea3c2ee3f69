"""How a stage's output records are kept in its cache folder, written and read one record at a time.

- tasks: `tasks.jsonl`, one TaskEntry per line;
- traces: `traces.jsonl`, one line per trace: its trial folder (relative to the cache root, so a
  moved cache still reads) and the trace filters it passed. The trajectories stay in the rollout's
  run folder; reading loads them one at a time.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from agentmill.errors import AgentmillError
from agentmill.recipe.records import TaskEntry
from agentmill.runtime.atomic import atomic_path
from agentmill.traces.records import TraceRecord, load_trace


class Store:
    file: str

    def __init__(self, folder: Path, cache_root: Path):
        self.path = folder / self.file
        self.cache_root = cache_root

    async def write(self, records: AsyncIterator[Any]) -> int:
        """Write every record under a temporary name, renamed into place at the end; the count."""
        n = 0
        with atomic_path(self.path) as tmp, open(tmp, "w", encoding="utf-8") as f:
            async for rec in records:
                f.write(self.encode(rec) + "\n")
                n += 1
        return n

    def read(self) -> Iterator[Any]:
        if not self.path.exists():
            raise AgentmillError(f"{self.path}: missing (the stage's cache folder is incomplete; delete it to rerun)")
        with open(self.path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = self.decode(line)
                except (ValueError, KeyError, TypeError) as e:  # a damaged cache file: say where, not a traceback
                    raise AgentmillError(
                        f"{self.path}: line {number}: {str(e).splitlines()[0][:200]} "
                        "(delete the stage's cache folder to rerun it)"
                    ) from None
                if rec is not None:
                    yield rec

    def encode(self, record: Any) -> str:
        raise NotImplementedError

    def decode(self, line: str) -> Any:
        raise NotImplementedError


class TaskStore(Store):
    file = "tasks.jsonl"

    def encode(self, record: TaskEntry) -> str:
        return record.model_dump_json()

    def decode(self, line: str) -> TaskEntry:
        return TaskEntry.model_validate_json(line)


class TraceStore(Store):
    file = "traces.jsonl"

    def encode(self, record: TraceRecord) -> str:
        if record.folder is None:
            raise AgentmillError(f"trace {record.trial_id}: no trial folder to refer to")
        return json.dumps({"trial": os.path.relpath(record.folder, self.cache_root), "passed": record.passed_filters})

    def decode(self, line: str) -> TraceRecord | None:
        ref = json.loads(line)
        try:
            rec = load_trace(self.cache_root / ref["trial"])
        except (OSError, ValueError, KeyError, TypeError):
            return None  # a trial folder removed since: the next stage sees one record fewer
        rec.passed_filters = list(ref.get("passed", []))
        return rec


STORES: dict[str, type[Store]] = {"tasks": TaskStore, "traces": TraceStore}
