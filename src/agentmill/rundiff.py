"""`agentmill diff A B`: are two output folders the same data, apart from when and where they ran?

Reproducibility is checked, not assumed: run the same recipe (or `check --json`, a rollout, an
export) twice, or before and after a refactor, and compare every file. What is allowed to differ is
named here and nowhere else: wall-clock fields (timestamps, durations, latencies, pids, hosts, run
ids drawn from the clock) and the folders' own absolute paths. Everything else (rows, rewards,
trajectories, ledgers, cache keys, parquet cells) must be equal, value for value; anything else is
a difference, listed with its file and the path to the first value that differs.

Files are read by kind: JSON and JSONL as values, SQLite as the sorted rows of every table, Parquet
as rows, any other file as bytes with timestamps masked.
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Keys whose values are clocks, places or scheduling luck (whether another trial had already shown
# the terminal's first screen: `first_turn_ahead`), in JSON objects and SQLite columns.
VOLATILE_KEY = re.compile(
    r"(^|_)(at|time|times|timestamp|timing|timings|started|finished|created|updated|mtime|duration|elapsed|"
    r"latency|wall|sec|secs|seconds|ms|pid|host|hostname|run_id|lag|ahead)($|_)|_s$",
    re.IGNORECASE,
)
ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?")
MASK = "<volatile>"


@dataclass
class Difference:
    file: str
    where: str  # path to the first differing value, or "missing in A/B", or "bytes"
    a: str = ""
    b: str = ""

    def line(self) -> str:
        detail = f": {self.a!s:.120} != {self.b!s:.120}" if self.a or self.b else ""
        return f"{self.file} [{self.where}]{detail}"


@dataclass
class Comparison:
    files: int = 0
    differences: list[Difference] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return not self.differences


def _mask_text(text: str, roots: tuple[str, ...]) -> str:
    for root in roots:
        text = text.replace(root, "<root>")
    return ISO_TIME.sub(MASK, text)


def _masked(value: Any) -> Any:
    """A clock's whole value (`"timings": {"agent": 1.3}`): its shape kept, its scalars masked."""
    if isinstance(value, dict):
        return {k: _masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v) for v in value]
    return MASK


def _normalize(value: Any, roots: tuple[str, ...]) -> Any:
    if isinstance(value, dict):
        return {k: _masked(v) if VOLATILE_KEY.search(str(k)) else _normalize(v, roots) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalize(v, roots) for v in value]
    if isinstance(value, str):
        return _mask_text(value, roots)
    return value


def _first_difference(a: Any, b: Any, where: str = "$") -> tuple[str, Any, Any] | None:
    if type(a) is not type(b):
        return where, a, b
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b:
                return f"{where}.{key}", a.get(key, "<absent>"), b.get(key, "<absent>")
            found = _first_difference(a[key], b[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b)):
            found = _first_difference(x, y, f"{where}[{i}]")
            if found:
                return found
        return (f"{where}.length", len(a), len(b)) if len(a) != len(b) else None
    return None if a == b else (where, a, b)


def _sqlite_rows(path: Path) -> dict[str, list]:
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        out = {}
        for table in tables:
            cursor = con.execute(f'SELECT * FROM "{table}"')
            columns = [d[0] for d in cursor.description]
            rows = [dict(zip(columns, [v.hex() if isinstance(v, bytes) else v for v in row])) for row in cursor]
            out[table] = rows
        return out
    finally:
        con.close()


def _parquet_rows(path: Path) -> list:
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def _load(path: Path, roots: tuple[str, ...]) -> Any:
    """A file as normalized values; rows of tables sorted so that write order does not matter."""
    suffix = path.suffix
    if suffix == ".json":
        return _normalize(json.loads(path.read_text()), roots)
    if suffix == ".jsonl":
        return [_normalize(json.loads(line), roots) for line in path.read_text().splitlines() if line.strip()]
    if suffix in (".sqlite", ".db"):
        tables = _normalize(_sqlite_rows(path), roots)
        return {
            name: sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))
            for name, rows in tables.items()
        }
    if suffix == ".parquet":
        return _normalize(_parquet_rows(path), roots)
    data = path.read_bytes()
    try:
        return _mask_text(data.decode(), roots)
    except UnicodeDecodeError:
        return data


def _files(root: Path, ignore: tuple[str, ...]) -> set[str]:
    names = set()
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if (
            path.is_file()
            and not path.is_symlink()
            and not any(part in ignore for part in Path(rel).parts)
            and not rel.endswith(("-wal", "-shm", ".lock"))
        ):
            names.add(rel)
    return names


def compare(a: Path, b: Path, ignore: tuple[str, ...] = (), aliases: tuple[tuple[str, str], ...] = ()) -> Comparison:
    """Every file of A and B, compared as values. `ignore` names path parts to leave out (e.g. 'logs');
    `aliases` pairs other folders that stand for each other (A's cache, B's cache)."""
    a, b = Path(a).resolve(), Path(b).resolve()
    roots_a = (str(a), *(x for x, _ in aliases))
    roots_b = (str(b), *(y for _, y in aliases))
    result = Comparison()
    files_a, files_b = _files(a, ignore), _files(b, ignore)
    for rel in sorted(files_a - files_b):
        result.differences.append(Difference(rel, "missing in B"))
    for rel in sorted(files_b - files_a):
        result.differences.append(Difference(rel, "missing in A"))
    for rel in sorted(files_a & files_b):
        result.files += 1
        try:
            va, vb = _load(a / rel, roots_a), _load(b / rel, roots_b)
        except (ValueError, sqlite3.Error, OSError) as e:
            result.differences.append(Difference(rel, f"unreadable: {e}"))
            continue
        if isinstance(va, (bytes, str)) or isinstance(vb, (bytes, str)):
            if va != vb:
                result.differences.append(Difference(rel, "bytes"))
            continue
        found = _first_difference(va, vb)
        if found:
            where, x, y = found
            result.differences.append(Difference(rel, where, json.dumps(x, default=str), json.dumps(y, default=str)))
    return result
