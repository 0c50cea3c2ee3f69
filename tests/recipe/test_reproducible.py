"""The bundled-style recipe run twice gives the same data (`agentmill diff`), and the comparison can
fail: a changed reward in the ledger, a changed exported row, a changed parquet cell or a missing file
is reported, while clocks, scheduling luck (a first turn asked ahead) and the folders' own paths are not."""

import asyncio
import json
import shutil
import sqlite3
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq

from agentmill.recipe.pipeline import Pipeline
from agentmill.recipe.schema import load_recipe
from agentmill.rundiff import compare
from tests.conftest import sandbox
from tests.helpers.chat_server import ChatServer
from tests.recipe.test_pipeline import policy_for_samples, recipe_text

EXPORTS = """
[[exports]]
format = "sharegpt"
file = "sharegpt.jsonl"

[[exports]]
format = "rl"
file = "rl.parquet"
"""


def _run(folder, base_url):
    folder.mkdir()
    path = folder / "recipe.toml"
    path.write_text(recipe_text(base_url, min_turns=1) + EXPORTS)
    recipe, raw = load_recipe(path)
    asyncio.run(Pipeline(recipe, raw, folder / "run").run())
    return folder / "run"


def diff(a, b, *more):
    return subprocess.run(
        [sys.executable, "-m", "agentmill.cli", "diff", str(a), str(b), *more], capture_output=True, text=True
    )


@sandbox
def test_a_recipe_run_twice_is_the_same_data_and_planted_changes_are_found(tmp_path):
    with ChatServer(policy_for_samples()) as srv:
        a = _run(tmp_path / "a", srv.base_url)
        b = _run(tmp_path / "b", srv.base_url)
    r = diff(a, b)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "same data" in r.stdout
    ledger = a / "rollout" / "ledger.sqlite"
    assert ledger.exists() and (a / "exports" / "rl.parquet").exists() and (a / "exports" / "trl.jsonl").exists()

    # a reward changed in one ledger row
    c = tmp_path / "c"
    shutil.copytree(b, c, symlinks=True)
    con = sqlite3.connect(c / "rollout" / "ledger.sqlite")
    tables = [t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    table = next(t for t in tables if "reward" in [col[1] for col in con.execute(f'PRAGMA table_info("{t}")')])
    con.execute(f'UPDATE "{table}" SET reward = 0.5 WHERE rowid = (SELECT MIN(rowid) FROM "{table}")')
    con.commit()
    con.close()
    r = diff(a, c, "--alias", f"{a}={b}")  # the copy still names b's folder inside
    assert r.returncode == 1 and r.stdout.splitlines()[-1].endswith(": 1 difference"), r.stdout
    assert "run/ledger.sqlite [$.trials[0].reward]: 1.0 != 0.5" in r.stdout

    # one word of one exported row
    c2 = tmp_path / "c2"
    shutil.copytree(b, c2, symlinks=True)
    rows = (c2 / "exports" / "trl.jsonl").read_text().splitlines()
    row = json.loads(rows[0])
    row["messages"][-1]["content"] += " "
    rows[0] = json.dumps(row)
    (c2 / "exports" / "trl.jsonl").write_text("\n".join(rows) + "\n")
    result = compare(a, c2, aliases=((str(a), str(b)),))
    assert [d.file for d in result.differences] == ["exports/trl.jsonl"]
    assert result.differences[0].where.startswith("$[0].messages[")

    # a parquet cell, and a file that only one side has
    c3 = tmp_path / "c3"
    shutil.copytree(b, c3, symlinks=True)
    table = pq.read_table(c3 / "exports" / "rl.parquet").to_pylist()
    table[0]["data_source"] = "agentmill/other"
    pq.write_table(pa.Table.from_pylist(table), c3 / "exports" / "rl.parquet")
    (c3 / "exports" / "trl.jsonl").unlink()
    found = {
        (d.file, d.where.split(".")[-1] if d.where.startswith("$") else d.where)
        for d in compare(a, c3, aliases=((str(a), str(b)),)).differences
    }
    assert ("exports/rl.parquet", "data_source") in found and ("exports/trl.jsonl", "missing in B") in found


def test_clocks_pids_and_own_paths_are_not_differences_but_values_are(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for root, when, took, pid, ahead in (
        (a, "2026-12-03T09:00:00.123Z", 1.5, 11, "not asked"),
        (b, "2026-12-04T10:30:00Z", 9.25, 22, "hit"),
    ):
        root.mkdir()
        (root / "trial.json").write_text(
            json.dumps(
                {
                    "started_at": when,
                    "agent": {"duration_sec": took, "first_turn_ahead": ahead},
                    "pid": pid,
                    "reward": 1.0,
                    "log": f"wrote {root}/out.txt at {when}",
                    "timings": {"model_ms": took},
                }
            )
        )
        (root / "notes.txt").write_text(f"finished {when}\n")
    assert compare(a, b).same
    (b / "trial.json").write_text((b / "trial.json").read_text().replace('"reward": 1.0', '"reward": 0.0'))
    (b / "notes.txt").write_text("finished later\n")
    found = {d.file: d for d in compare(a, b).differences}
    assert found["trial.json"].where == "$.reward" and (found["trial.json"].a, found["trial.json"].b) == ("1.0", "0.0")
    assert found["notes.txt"].where == "bytes"
    r = diff(a, tmp_path / "nowhere")
    assert r.returncode == 2 and "nowhere: not a folder" in r.stderr
