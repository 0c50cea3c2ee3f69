"""Write rows as JSONL or Parquet, atomically: a temporary file renamed into place, never half-written."""

from __future__ import annotations

import json
import os
from pathlib import Path

from agentmill.errors import AgentmillError


def write_rows(rows: list[dict], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        if path.suffix == ".jsonl":
            with open(tmp, "w", encoding="utf-8") as f:
                for row in rows:
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")
                f.flush()
                os.fsync(f.fileno())
        elif path.suffix == ".parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.Table.from_pylist(rows), tmp)
        else:
            raise AgentmillError(f"--out {path}: use a .jsonl or .parquet file name")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def write_json(data, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False))
    tmp.replace(path)
