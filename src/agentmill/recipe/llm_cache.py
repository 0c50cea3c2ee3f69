"""Content-addressed cache of model answers: a rerun of a recipe costs no tokens.

Key = hash(model name, sampling parameters, messages, response schema); value = the answer text
and its usage. SQLite (WAL), safe across concurrent stages and processes.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from agentmill.models.client import ModelClient
from agentmill.models.seeding import derived_seed
from agentmill.tasks.hashing import hash_text


class CachedModel:
    """Wraps a ModelClient: `await ask(messages)` returns the answer text, from cache when possible."""

    def __init__(self, client: ModelClient, db_path: Path):
        self.client = client
        db_path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(db_path, timeout=30, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, model TEXT, answer TEXT, "
            "prompt_tokens INTEGER, completion_tokens INTEGER, created REAL)"
        )
        self.hits = self.misses = 0
        self._locks: dict[str, asyncio.Lock] = {}

    def key(self, messages: list[dict[str, Any]], json_schema: dict | None) -> str:
        return hash_text(
            self.client.model,
            self.client.sampling.model_dump_json(),
            json.dumps(messages, sort_keys=True),
            json.dumps(json_schema, sort_keys=True),
        )

    async def ask(self, messages: list[dict[str, Any]], *, json_schema: dict | None = None) -> str:
        key = self.key(messages, json_schema)
        async with self._locks.setdefault(key, asyncio.Lock()):
            row = self.db.execute("SELECT answer FROM answers WHERE key=?", (key,)).fetchone()
            if row is not None:
                self.hits += 1
                return row[0]
            self.misses += 1
            base = self.client.sampling.seed  # seeded runs: the same prompt samples the same answer again
            seed = derived_seed(base, key) if base is not None else None
            reply = await self.client.chat(messages, json_schema=json_schema, seed=seed)
            self.db.execute(
                "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?)",
                (
                    key,
                    self.client.model,
                    reply.content,
                    reply.usage.prompt_tokens,
                    reply.usage.completion_tokens,
                    time.time(),
                ),
            )
            return reply.content

    def close(self) -> None:
        self.db.close()
