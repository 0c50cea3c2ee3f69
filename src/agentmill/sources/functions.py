"""`functions`: Python function contracts with unit tests (pymethods2test's shape).

Input: a JSONL or Parquet table, one row per problem: a statement, a function signature, a
unittest or pytest suite, a reference solution (column names mappable). Each row becomes a task:
write the function in /app/solution.py; the suite, staged read-only in /tests, imports it
(`from solution import ...`). Every task is checked in the sandbox before it is admitted, so a row
whose reference fails its own tests (`reference_fails`) or whose tests pass with no solution at
all (`vacuous_tests`) is reported and dropped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentmill.errors import AgentmillError
from agentmill.sources.folders import (
    SourceReport,
    admit,
    cached_output,
    fresh_output,
    heredoc,
    is_done,
    mark_done,
    run_sync,
    slug,
    timed,
)
from agentmill.tasks.hashing import hash_file, hash_text
from agentmill.tasks.io import write_task
from agentmill.tasks.model import AgentSection, EnvironmentSection, TaskConfig, VerifierSection

COLUMNS = {"id": "id", "statement": "statement", "signature": "signature", "tests": "tests", "solution": "solution"}
REQUIRED = ("statement", "signature", "tests", "solution")
VERSION = "1"  # bump when the task layout changes: cached outputs are regenerated

TEST_SH = """#!/bin/bash
# Verifier: the row's own unit tests against /app/solution.py; reward 1 only if every test ran and passed.
mkdir -p /logs/verifier
rm -f /logs/verifier/outcomes.json
cd /app
PYTHONPATH="/app${PYTHONPATH:+:$PYTHONPATH}" pytest -q -p no:cacheprovider /tests/test_solution.py
/usr/bin/python3 -I /tests/grade_all.py $? /logs/verifier/outcomes.json /logs/verifier/reward.txt
"""
FILES = Path(__file__).with_name("verifier_files")  # the outcome recorder (conftest.py) and the grader

INSTRUCTION = """{statement}

Write this function in `/app/solution.py` (a plain module, importable as `solution`):

```python
{signature}
```

It will be checked by unit tests that import it from `solution`.
"""


def read_rows(table: Path) -> list[dict[str, Any]]:
    """The rows of a .jsonl/.json-lines or .parquet table (one clear error naming the file and line)."""
    if not table.is_file():
        raise AgentmillError(f"{table}: no such file")
    if table.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            return pq.read_table(table).to_pylist()
        except Exception as e:  # pyarrow's errors have no common base worth naming
            raise AgentmillError(f"{table}: not a readable Parquet table: {e}") from None
    rows = []
    for n, line in enumerate(table.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise AgentmillError(f"{table}:{n}: not JSON: {e.msg}") from None
        if not isinstance(row, dict):
            raise AgentmillError(f"{table}:{n}: a row must be a JSON object")
        rows.append(row)
    return rows


def column_map(columns: dict[str, str] | None) -> dict[str, str]:
    unknown = set(columns or {}) - set(COLUMNS)
    if unknown:
        raise AgentmillError(f"columns: unknown field(s) {', '.join(sorted(unknown))} (known: {', '.join(COLUMNS)})")
    return {**COLUMNS, **(columns or {})}


def task_for_row(dest: Path, row: dict[str, Any]) -> Path:
    config = TaskConfig(
        metadata={"source": "functions", "row": row.get("id")},
        agent=AgentSection(timeout_sec=600),
        verifier=VerifierSection(timeout_sec=120),
        environment=EnvironmentSection(memory_mb=1024, storage_mb=1024),
    )
    return write_task(
        dest,
        instruction=INSTRUCTION.format(statement=row["statement"].strip(), signature=row["signature"].strip()),
        config=config,
        test_sh=TEST_SH,
        test_files={
            "test_solution.py": row["tests"],
            "pytest.ini": "[pytest]\n",
            **{name: (FILES / name).read_text(encoding="utf-8") for name in ("conftest.py", "grade_all.py")},
        },
        solve_sh="#!/bin/bash\nset -euo pipefail\n" + heredoc("/app/solution.py", row["solution"]),
        dockerfile="FROM python:3.11-slim\nWORKDIR /app\n",
    )


def generate(
    table: Path,
    out: Path,
    *,
    columns: dict[str, str] | None = None,
    limit: int | None = None,
    concurrency: int = 4,
    builder=None,
) -> SourceReport:
    """Write one checked task per row of `table` into `out/tasks`; the report says what was dropped."""
    cols = column_map(columns)
    rows = read_rows(table)
    fresh_output(out)
    report = SourceReport(kind="functions")
    with timed(report):
        seen: set[str] = set()
        for n, raw in enumerate(rows[:limit] if limit else rows, 1):
            label = str(raw.get(cols["id"]) or f"row-{n}")
            missing = [k for k in REQUIRED if not isinstance(raw.get(cols[k]), str) or not raw[cols[k]].strip()]
            if missing:
                report.drop(
                    label,
                    "bad_row",
                    f"{table}: row {n}: missing or empty " + ", ".join(f"'{cols[k]}'" for k in missing),
                )
                continue
            row = {k: raw[cols[k]] for k in REQUIRED} | {"id": label}
            name = f"{slug(label, 48)}-{hash_text(*(row[k] for k in REQUIRED))[:6]}"
            if name in seen:
                report.drop(label, "duplicate", "the same statement, signature, tests and solution as an earlier row")
                continue
            seen.add(name)
            report.candidates += 1
            task_for_row(out / "candidates" / name, row)
        run_sync(
            admit(
                out,
                report,
                concurrency=concurrency,
                builder=builder,
                why={"unsolvable": "reference_fails", "vacuous": "vacuous_tests"},
            )
        )
    report.write(out)
    mark_done(out)
    return report


def functions_tasks_dir(path: Path | str, params: dict[str, Any] | None = None) -> Path:
    """`[[sources]] kind = "functions"`: `path` is the table; params: columns, limit. Generated once
    per (table content, options) into the agentmill cache, then read from there."""
    params = dict(params or {})
    table = Path(path)
    columns, limit = params.pop("columns", None), params.pop("limit", None)
    if params:
        raise AgentmillError(f"functions source: unknown option(s) {', '.join(sorted(params))} (known: columns, limit)")
    if not table.is_file():
        raise AgentmillError(f"{table}: no such file (a functions source reads a .jsonl or .parquet table)")
    out = cached_output("functions", VERSION, hash_file(table), json.dumps([columns, limit], sort_keys=True))
    if not is_done(out):
        generate(table, out, columns=columns, limit=limit)
    return out / "tasks"
