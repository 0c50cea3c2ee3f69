"""Write rows as JSONL or Parquet, atomically: a temporary file renamed into place, never half-written.

Both are written as the rows come, in bounded memory: JSONL line by line, Parquet in row groups of
PARQUET_BATCH rows under one schema unified over every batch.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from agentmill.errors import AgentmillError
from agentmill.runtime.atomic import atomic_path, write_json_atomic

SUFFIXES = (".jsonl", ".parquet")
PARQUET_BATCH = 1000  # rows per row group: bounds memory for any number of rows


class JsonLine(str):
    """A row already serialized (by `jsonl_line`, in a worker process): written as it is."""


def jsonl_line(row: dict) -> JsonLine:
    """A row's JSONL line, newline included: the one serialization of every row, in any process."""
    return JsonLine(json.dumps(row, ensure_ascii=False) + "\n")


def write_rows(rows: Iterable[dict | JsonLine], path: Path, *, keep_empty: bool = True) -> int:
    """Write every row (a dict or its JsonLine) to `path`; the number written. With keep_empty=False,
    zero rows write nothing."""
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


# A control-flow signal, not an error (so not an AgentmillError): raised through atomic_path so the
# temporary file is discarded, and caught by write_rows right there. It never leaves this module.
class _Empty(Exception):
    """Zero rows and keep_empty=False: the temporary file is discarded."""


def _write_jsonl(rows: Iterable[dict | JsonLine], tmp: Path) -> int:
    n = 0
    with open(tmp, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(row if isinstance(row, JsonLine) else jsonl_line(row))
            n += 1
    return n


def _write_parquet(rows: Iterable[dict | JsonLine], tmp: Path) -> int:
    """Rows are spooled to a JSONL file while each batch's schema is inferred; the schemas are unified
    (a field that is null in one batch and a list in another gets the list type, as one table built
    from every row would), then the spool is read back batch by batch into row groups."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    spool = tmp.with_name(tmp.name + ".rows")
    schemas, batch, n = [], [], 0
    try:
        with open(spool, "w", encoding="utf-8") as f:
            for row in rows:
                if isinstance(row, JsonLine):
                    f.write(row)
                    row = json.loads(row)  # the same values: a row holds only what JSON holds
                else:
                    f.write(jsonl_line(row))
                batch.append(row)
                n += 1
                if len(batch) == PARQUET_BATCH:
                    schemas.append(pa.Table.from_pylist(batch).schema)
                    batch = []
        if batch:
            schemas.append(pa.Table.from_pylist(batch).schema)
        if n == 0:
            pq.write_table(pa.Table.from_pylist([]), tmp)
            return 0
        schema = pa.unify_schemas(schemas, promote_options="permissive")
        with pq.ParquetWriter(tmp, schema) as writer, open(spool, encoding="utf-8") as f:
            batch = []
            for line in f:
                batch.append(json.loads(line))
                if len(batch) == PARQUET_BATCH:
                    writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                    batch = []
            if batch:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
    finally:
        spool.unlink(missing_ok=True)
    return n


def write_json(data, path: Path) -> None:
    write_json_atomic(path, data, ensure_ascii=False)
