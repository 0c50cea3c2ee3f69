"""`functions`: a table of function contracts -> checked task folders (oracle 1, nop 0)."""

import asyncio
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from agentmill.errors import AgentmillError
from agentmill.rollout.check import check_tasks
from agentmill.sources.functions import generate, read_rows
from agentmill.tasks import load_dataset
from tests.conftest import sandbox, scratch_cache

FIXTURE = Path(__file__).parent / "fixtures" / "functions.jsonl"


@sandbox
def test_rows_become_checked_tasks_and_bad_references_are_dropped(tmp_path, builder):
    report = generate(FIXTURE, tmp_path / "out", builder=builder)
    kept = sorted(n.rsplit("-", 1)[0] for n in report.kept)
    assert kept == ["clamp", "is-palindrome", "run-length"]
    reasons = {d.name.rsplit("-", 1)[0] if d.name != "no-tests" else d.name: d.reason for d in report.dropped}
    assert reasons == {"median": "reference_fails", "vacuous": "vacuous_tests", "no-tests": "bad_row"}
    assert "'tests'" in next(d.detail for d in report.dropped if d.name == "no-tests")
    saved = json.loads((tmp_path / "out" / "report.json").read_text())
    assert saved["reasons"] == {"reference_fails": 1, "vacuous_tests": 1, "bad_row": 1}
    assert not (tmp_path / "out" / "candidates").exists()

    # what was admitted is an ordinary task folder that `check` passes again from scratch
    ds = load_dataset(tmp_path / "out" / "tasks")
    assert ds.errors == [] and len(ds.tasks) == 3
    clamp = next(t for t in ds.tasks if t.name.startswith("clamp"))
    assert "/app/solution.py" in clamp.instruction and "def clamp(x: float" in clamp.instruction
    assert "max(lo" not in clamp.instruction  # the reference is never shown
    results = asyncio.run(check_tasks(ds.tasks, builder=builder))
    assert {r.verdict for r in results} == {"ok"}
    assert all(r.oracle.reward == 1.0 and r.nop.reward == 0.0 for r in results)


@pytest.fixture(scope="module")
def clamp_task(tmp_path_factory):
    """One admitted task (the fixture's first row), generated once for the tests that attack it."""
    from agentmill.images import ImageBuilder

    out = tmp_path_factory.mktemp("fn") / "out"
    generate(FIXTURE, out, builder=ImageBuilder(), limit=1)
    [task_dir] = list((out / "tasks").iterdir())
    return task_dir


def oracle_with(task_dir, tmp_path, solution_py: str, builder):
    """The task, copied, with a solve.sh that writes `solution_py` as /app/solution.py."""
    copy = tmp_path / "tasks" / task_dir.name
    shutil.copytree(task_dir, copy)
    (copy / "solution" / "solve.sh").write_text(f"#!/bin/bash\ncat > /app/solution.py <<'EOF'\n{solution_py}EOF\n")
    [result] = asyncio.run(check_tasks(load_dataset(copy.parent).tasks, builder=builder))
    return result


@sandbox
def test_a_wrong_solution_gets_reward_zero(clamp_task, tmp_path, builder):
    result = oracle_with(clamp_task, tmp_path, "def clamp(x, lo, hi):\n    return x\n", builder)
    assert result.oracle.reward == 0.0 and result.verdict == "unsolvable"


def test_parquet_tables_and_mapped_columns_read_the_same_rows(tmp_path):
    rows = read_rows(FIXTURE)
    renamed = [
        {
            "task_id": r["id"],
            "prompt": r["statement"],
            "signature": r["signature"],
            "test_code": r["tests"],
            "canonical": r["solution"],
        }
        for r in rows
    ]
    pq.write_table(pa.Table.from_pylist(renamed), tmp_path / "t.parquet")
    assert read_rows(tmp_path / "t.parquet") == renamed
    from agentmill.sources.functions import column_map

    cols = column_map({"id": "task_id", "statement": "prompt", "tests": "test_code", "solution": "canonical"})
    assert cols["signature"] == "signature" and cols["tests"] == "test_code"
    with pytest.raises(AgentmillError, match="unknown field.*statment"):
        column_map({"statment": "prompt"})


def test_a_broken_table_is_one_error_naming_file_and_line(tmp_path):
    bad = tmp_path / "t.jsonl"
    bad.write_text('{"id": "a"}\n{not json\n')
    with pytest.raises(AgentmillError, match=r"t.jsonl:2: not JSON"):
        read_rows(bad)
    with pytest.raises(AgentmillError, match="no such file"):
        read_rows(tmp_path / "missing.jsonl")


@sandbox
def test_a_recipe_mixes_a_functions_source_generated_once_and_cached(tmp_path, monkeypatch, declared_source_kinds):
    from agentmill.recipe.schema import load_recipe
    from agentmill.recipe.stages.sources import load_sources

    cache = scratch_cache(tmp_path)  # sandbox uids build images there
    monkeypatch.setenv("AGENTMILL_CACHE", str(cache))
    table = tmp_path / "contracts.jsonl"
    shutil.copy(FIXTURE, table)
    recipe = tmp_path / "r.toml"
    recipe.write_text(
        '[[sources]]\nname = "fn"\nkind = "functions"\npath = "contracts.jsonl"\n'
        'params = { limit = 2 }\n\n[[sources]]\nname = "bundled"\nsample = true\ntasks = ["json-users-to-csv"]\n'
    )
    tasks, report = load_sources(load_recipe(recipe)[0])
    names = sorted(t.name for t in tasks)
    assert names[0] == "bundled/json-users-to-csv"
    assert [n.rsplit("-", 1)[0] for n in names[1:]] == ["fn/clamp", "fn/run-length"]
    [out] = list((cache / "sources" / "functions").iterdir())
    stamp = (out / ".done").stat().st_mtime_ns
    load_sources(load_recipe(recipe)[0])  # cached: not generated again
    assert (out / ".done").stat().st_mtime_ns == stamp

    recipe.write_text(
        '[[sources]]\nname = "fn"\nkind = "functions"\npath = "contracts.jsonl"\nparams = { colums = {} }\n'
    )
    with pytest.raises(AgentmillError, match="unknown option.*colums"):
        load_sources(load_recipe(recipe)[0])


@sandbox
@pytest.mark.parametrize(
    "trick",
    ["import os\nos._exit(0)\n", "import sys\nsys.exit(0)\n", "import unittest\nraise unittest.SkipTest('later')\n"],
)
def test_a_solution_that_ends_or_skips_the_test_run_gets_nothing(clamp_task, tmp_path, builder, trick):
    """planted attack: the solution module ends pytest with status 0 (or skips the module) at import."""
    result = oracle_with(clamp_task, tmp_path, trick, builder)
    assert result.oracle.reward == 0.0, result.oracle.verifier_stdout
