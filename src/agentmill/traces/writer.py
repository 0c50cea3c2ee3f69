"""Write rows as JSONL or Parquet, atomically: a temporary file renamed into place, never half-written.

JSONL is written as the rows come (a stream of any length in bounded memory); Parquet needs one
schema for the whole file, so its rows are gathered first.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from agentmill.atomic import atomic_path, write_json_atomic
from agentmill.errors import AgentmillError

SUFFIXES = (".jsonl", ".parquet")


def write_rows(rows: Iterable[dict], path: Path, *, keep_empty: bool = True) -> int:
    """Write every row to `path`; the number written. With keep_empty=False, zero rows write nothing."""
    path = Path(path)
    if path.suffix not in SUFFIXES:
        raise AgentmillError(f"--out {path}: use a .jsonl or .parquet file name")
    try:
        with atomic_path(path) as tmp:
            n = _write_jsonl(rows, tmp) if path.suffix == ".jsonl" else _write_parquet(rows, tmp)
            if n == 0 and not keep_empty:
                raise _Empty
    except _Empty:
        return 0
    return n


class _Empty(Exception):
    """Zero rows and keep_empty=False: the temporary file is discarded."""


def _write_jsonl(rows: Iterable[dict], tmp: Path) -> int:
    n = 0
    with open(tmp, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


def _write_parquet(rows: Iterable[dict], tmp: Path) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(list(rows))
    pq.write_table(table, tmp)
    return table.num_rows


def write_json(data, path: Path) -> None:
    write_json_atomic(path, data, ensure_ascii=False)
