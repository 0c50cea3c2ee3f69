"""Accepted samples on disk: `<out>/tasks/<candidate_id>/` tool-task folders (what `check`, rollouts and
recipes read) and `<out>/accepted.jsonl` (one row per acceptance, with lineage). Both are derived from
the store, so they can always be rebuilt from it."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

from agentmill.runtime.atomic import write_text_atomic
from agentmill.synth.candidate import Candidate, GymSet, write_task_folder
from agentmill.synth.store import SynthStore


def tasks_dir(out: Path) -> Path:
    return Path(out) / "tasks"


def publish(cand: Candidate, out: Path, env: GymSet) -> Path:
    """Write the folder under a temporary name, then rename it into place."""
    final = tasks_dir(out) / cand.candidate_id
    tmp = tasks_dir(out) / f".tmp-{cand.candidate_id}-{uuid.uuid4().hex[:6]}"
    write_task_folder(cand, tmp, env)
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    return final


def write_jsonl(store: SynthStore) -> Path:
    rows = []
    for c in store.accepted():
        b = c.body
        rows.append(
            json.dumps(
                {
                    "id": c.candidate_id,
                    "card_id": c.card_id,
                    "kind": c.kind,
                    "parent_id": c.parent_id,
                    "system_prompt": b.system,
                    "user_prompt": b.prompt,
                    "seed_sql": b.seed_sql,
                    "calls": [x.model_dump() for x in b.calls],
                    "answer": b.answer,
                    "verifiers": b.verifiers,
                },
                ensure_ascii=False,
            )
        )
    path = store.out / "accepted.jsonl"
    write_text_atomic(path, "".join(r + "\n" for r in rows))
    return path


def materialize(store: SynthStore, env: GymSet) -> int:
    """Every acceptance has its folder (rewritten if a kill cut it short); stray temporaries go."""
    root = tasks_dir(store.out)
    root.mkdir(parents=True, exist_ok=True)
    for stray in root.glob(".tmp-*"):
        shutil.rmtree(stray, ignore_errors=True)
    written = 0
    for cand in store.accepted():
        if not (root / cand.candidate_id / "task.toml").is_file():
            publish(cand, store.out, env)
            written += 1
    write_jsonl(store)
    return written
