"""The bundled gyms (itsm, collab) and tool tasks (tasks/sample_tools), checked inside the real sandbox.

Tools are task code: they never run in this Python. One bubblewrap sandbox gets the gyms and tasks
read-only and runs GUEST (stdlib python3) which, per task, builds one database per gym (schema, gym
seed, then the task's seed with the other gyms attached, as the runtime does), evaluates every
verifier query on the untouched state, replays solution/calls.json one call per fresh connection,
evaluates the queries after every call, and then mutates the oracle's end state (each written
cell reverted or set to another value of its column, the change moved to a neighbouring row,
each inserted row removed) and evaluates the queries on every mutant. The host then asserts:
the oracle end state passes every database_state verifier; the untouched state and every state
short of the last write fail at least one (refusal tasks: the state stays untouched and the
response_check carries the verdict); every mutant fails at least one.
"""

from __future__ import annotations

import asyncio
import json
import tomllib
from pathlib import Path

import pytest

from agentmill.sandbox import BwrapSandbox
from tests.conftest import sandbox
from tests.sandbox.helpers import fresh_spec

pytestmark = sandbox

SRC = Path(__file__).resolve().parents[2] / "src" / "agentmill"
GYMS = SRC / "envs" / "gyms"
TASKS = SRC / "tasks" / "sample_tools"
BUNDLED = ("itsm", "collab")
READ_PREFIXES = ("get_", "search_", "list_", "find_", "read_")

GUEST = r'''
import importlib.util, inspect, json, os, shutil, sqlite3, sys, tempfile

req = json.load(sys.stdin)
GYMS, TASKS = req["gyms_root"], req["tasks_root"]

def script(db, path):
    with open(path, encoding="utf-8") as f:
        db.executescript(f.read())
    db.commit()

def build(gyms, seed, where):
    dbs = {}
    for g in gyms:
        dbs[g] = os.path.join(where, g + ".sqlite")
        db = sqlite3.connect(dbs[g])
        for part in ("schema.sql", "seed.sql"):
            if os.path.exists(os.path.join(GYMS, g, part)):
                script(db, os.path.join(GYMS, g, part))
        db.close()
    if seed:
        db = sqlite3.connect(dbs[gyms[0]])
        for g in gyms[1:]:
            db.execute(f"ATTACH DATABASE ? AS {g}", (dbs[g],))
        script(db, seed)
        db.close()
    return dbs

def query(dbs, gyms, sql, gym):
    gym = gym or gyms[0]
    db = sqlite3.connect(f"file:{dbs[gym]}?mode=ro", uri=True)
    try:
        for g in gyms:
            if g != gym:
                db.execute(f"ATTACH DATABASE ? AS {g}", (f"file:{dbs[g]}?mode=ro",))
        cur = db.execute(sql)
        cols = [d[0] for d in cur.description or []]
        return {"rows": [dict(zip(cols, r)) for r in cur.fetchall()]}
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"}
    finally:
        db.close()

def snapshot(dbs, task):
    return [query(dbs, task["gyms"], q["sql"], q["gym"]) for q in task["queries"]]

def load_tools(gyms):
    tools = {}
    for g in gyms:
        spec = importlib.util.spec_from_file_location("gym_" + g, os.path.join(GYMS, g, "tools.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for name, fn in vars(mod).items():
            if not name.startswith("_") and inspect.isfunction(fn) and fn.__module__ == mod.__name__:
                params = list(inspect.signature(fn).parameters)
                if params and params[0] == "db":
                    assert name not in tools, f"tool {name} defined twice"
                    tools[name] = (fn, g)
    return tools

def call(tools, dbs, name, args):
    if name not in tools:
        return {"is_error": True, "content": f"unknown tool {name}"}
    fn, gym = tools[name]
    db = sqlite3.connect(dbs[gym])
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA foreign_keys = ON")
    try:
        value = fn(db, **args)
        text = json.dumps(value)
        db.commit()
        return {"is_error": False, "content": text[:300]}
    except Exception as e:
        db.rollback()
        return {"is_error": True, "content": f"{type(e).__name__}: {e}"}
    finally:
        db.close()

def table_rows(path):
    db = sqlite3.connect(path)
    out = {}
    for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"):
        cur = db.execute(f"SELECT rowid, * FROM {t}")
        cols = [d[0] for d in cur.description][1:]
        out[t] = (cols, {r[0]: r[1:] for r in cur.fetchall()})
    db.close()
    return out

def mutants(before, after):
    """(label, gym, [sql, params]) edits of the end state, one defect each."""
    out = []
    for gym in after:
        b, a = table_rows(before[gym]), table_rows(after[gym])
        for t, (cols, rows) in a.items():
            old = b[t][1]
            changed = [(rid, r) for rid, r in rows.items() if rid in old and old[rid] != r]
            for rid, r in changed:
                diff = [i for i, c in enumerate(cols) if old[rid][i] != r[i]]
                for i in diff:
                    out.append((f"revert {t}[{rid}].{cols[i]}", gym, [(f"UPDATE {t} SET {cols[i]} = ? WHERE rowid = ?", (old[rid][i], rid))]))
                    out.append((f"other value {t}[{rid}].{cols[i]}", gym, [("__other__", (t, cols[i], rid, r[i]))]))
                others = [x for x in rows if x != rid and x in old and rows[x] == old[x]]
                if others:
                    near = min(others, key=lambda x: abs(x - rid))
                    sets = ", ".join(f"{cols[i]} = ?" for i in diff)
                    out.append((f"move {t}[{rid}] change to row {near}", gym, [
                        (f"UPDATE {t} SET {sets} WHERE rowid = ?", (*[r[i] for i in diff], near)),
                        (f"UPDATE {t} SET {sets} WHERE rowid = ?", (*[old[rid][i] for i in diff], rid))]))
            for rid, r in rows.items():
                if rid not in old:
                    out.append((f"drop inserted {t}[{rid}]", gym, [(f"DELETE FROM {t} WHERE rowid = ?", (rid,))]))
                    for i, c in enumerate(cols):
                        out.append((f"other value inserted {t}[{rid}].{c}", gym, [("__other__", (t, c, rid, r[i]))]))
    return out

def apply_mutant(dbs, gym, edits):
    db = sqlite3.connect(dbs[gym])
    db.execute("PRAGMA foreign_keys = ON")
    try:
        for sql, params in edits:
            if sql == "__other__":
                t, c, rid, cur = params
                row = db.execute(f"SELECT {c} FROM {t} WHERE {c} IS NOT ? AND {c} IS NOT NULL GROUP BY {c} ORDER BY COUNT(*) DESC, {c} LIMIT 1", (cur,)).fetchone()
                if row is None:
                    return False
                db.execute(f"UPDATE {t} SET {c} = ? WHERE rowid = ?", (row[0], rid))
            else:
                db.execute(sql, params)
        fk = db.execute("PRAGMA foreign_key_check").fetchall()
        if fk:
            db.rollback()
            return False
        db.commit()
        return True
    except sqlite3.Error:
        db.rollback()
        return False
    finally:
        db.close()

report = {}
for task in req["tasks"]:
    work = tempfile.mkdtemp()
    try:
        os.makedirs(os.path.join(work, "base"))
        base = build(task["gyms"], task["seed"], os.path.join(work, "base"))
        untouched = snapshot(base, task)
        os.makedirs(os.path.join(work, "run"))
        dbs = {g: shutil.copy(p, os.path.join(work, "run", g + ".sqlite")) for g, p in base.items()}
        tools = load_tools(task["gyms"])
        calls, states = [], []
        for c in task["calls"]:
            calls.append(call(tools, dbs, c["tool"], c.get("arguments", {})))
            states.append(snapshot(dbs, task))
        muts = []
        for label, gym, edits in mutants(base, dbs):
            mdir = tempfile.mkdtemp(dir=work)
            mdbs = {g: shutil.copy(p, os.path.join(mdir, g + ".sqlite")) for g, p in dbs.items()}
            if apply_mutant(mdbs, gym, edits):
                muts.append({"label": label, "results": snapshot(mdbs, task)})
            shutil.rmtree(mdir)
        report[task["name"]] = {"untouched": untouched, "calls": calls, "states": states, "mutants": muts,
                                "tools": sorted(tools)}
    except Exception as e:
        report[task["name"]] = {"error": f"{type(e).__name__}: {e}"}
    finally:
        shutil.rmtree(work, ignore_errors=True)
print(json.dumps(report))
'''


# -- EnterpriseOps-Gym comparison semantics -------------------------------------------------------------

def extract(rows: list[dict]):
    if len(rows) == 1:
        return next(iter(rows[0].values())) if len(rows[0]) == 1 else rows[0]
    return rows


def passes(result: dict, cfg: dict) -> bool:
    if "error" in result:
        return False
    actual, expected, kind = extract(result["rows"]), cfg.get("expected_value"), cfg.get("comparison_type", "equals")
    try:
        return {"equals": lambda: actual == expected, "greater_than": lambda: actual > expected,
                "less_than": lambda: actual < expected, "contains": lambda: str(expected) in str(actual)}[kind]()
    except TypeError:
        return False


# -- loading the bundled tasks ---------------------------------------------------------------------------

def task_dirs() -> list[Path]:
    return sorted(p for p in TASKS.iterdir() if (p / "task.toml").is_file()) if TASKS.is_dir() else []


def read_task(path: Path) -> dict:
    toml = tomllib.loads((path / "task.toml").read_text())
    verifiers = json.loads((path / "tests" / "verifiers.json").read_text())
    calls = json.loads((path / "solution" / "calls.json").read_text())
    answer = None
    if isinstance(calls, dict):
        calls, answer = calls["calls"], calls.get("answer")
    queries, db_verifiers = [], []
    for v in verifiers:
        cfg = v["validation_config"]
        if v["verifier_type"] == "database_state":
            db_verifiers.append((len(queries), v))
            queries.append({"sql": cfg["query"], "gym": v.get("gym_name")})
        elif v["verifier_type"] == "response_check":
            queries.append({"sql": cfg["sql_query"], "gym": v.get("gym_name")})
    seed = path / "environment" / "seed.sql"
    return {"name": path.name, "path": path, "toml": toml, "verifiers": verifiers, "calls": calls, "answer": answer,
            "queries": queries, "db_verifiers": db_verifiers, "seed": seed if seed.is_file() else None}


TASK_RECORDS = {p.name: read_task(p) for p in task_dirs()}


def run_guest(tasks: list[dict]) -> dict:
    """Run GUEST in one sandbox over the gyms and tasks (read-only) and return its report."""
    spec = fresh_spec(ro_mounts={"/gyms": GYMS, "/tasks": TASKS})
    payload = {"gyms_root": "/gyms", "tasks_root": "/tasks", "tasks": [
        {"name": t["name"], "gyms": t["toml"]["environment"]["gyms"],
         "seed": f"/tasks/{t['name']}/environment/seed.sql" if t["seed"] else None,
         "calls": t["calls"], "queries": t["queries"]} for t in tasks]}

    async def go():
        async with BwrapSandbox(spec) as sb:
            await sb.write_file("/app/guest.py", GUEST)
            return await sb.exec(["python3", "-I", "/app/guest.py"], timeout=600, stdin=json.dumps(payload).encode())

    r = asyncio.run(go())
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def report() -> dict:
    return run_guest(list(TASK_RECORDS.values()))


def is_refusal(task: dict) -> bool:
    return bool(task["toml"].get("metadata", {}).get("refusal"))


def failing(task: dict, results: list[dict]) -> list[str]:
    return [v["name"] for i, v in task["db_verifiers"] if not passes(results[i], v["validation_config"])]


# -- the collection ------------------------------------------------------------------------------------------

def test_the_collection_has_the_required_shape():
    tasks = list(TASK_RECORDS.values())
    assert len(tasks) >= 24
    assert sum(1 for t in tasks if set(t["toml"]["environment"]["gyms"]) == {"itsm", "collab"}) >= 4
    assert sum(1 for t in tasks if is_refusal(t)) >= 4
    for t in tasks:
        env = t["toml"]["environment"]
        assert env["kind"] == "tools" and set(env["gyms"]) <= set(BUNDLED), t["name"]
        assert t["toml"]["agent"]["timeout_sec"] > 0
        assert (t["path"] / "instruction.md").read_text().strip() and (t["path"] / "system.md").read_text().strip()
        names = [v["name"] for v in t["verifiers"]]
        assert len(names) == len(set(names)), f"{t['name']}: duplicate verifier names"
        assert t["db_verifiers"], f"{t['name']}: no database_state verifier"
        for v in t["verifiers"]:
            assert v.get("gym_name") in (None, *env["gyms"]), f"{t['name']}: {v['name']} names gym {v.get('gym_name')}"
        if is_refusal(t):
            assert any(v["verifier_type"] == "response_check" for v in t["verifiers"]), t["name"]
            assert t["answer"], f"{t['name']}: a refusal's reference answer explains why"


@pytest.mark.parametrize("name", sorted(TASK_RECORDS))
def test_oracle_passes_and_wrong_states_fail(name, report):
    task, rep = TASK_RECORDS[name], report[name]
    assert "error" not in rep, rep.get("error")
    errors = [(c["tool"], r["content"]) for c, r in zip(task["calls"], rep["calls"]) if r["is_error"]]
    assert not errors, f"reference calls failed: {errors}"
    unknown = {c["tool"] for c in task["calls"]} - set(rep["tools"])
    assert not unknown
    final = rep["states"][-1] if rep["states"] else rep["untouched"]
    for r, q in zip(final, task["queries"]):
        assert "error" not in r, f"query failed: {q['sql']}: {r['error']}"
    assert failing(task, final) == [], "the oracle's end state must pass every database_state verifier"
    writes = [i for i, c in enumerate(task["calls"]) if not c["tool"].startswith(READ_PREFIXES)]
    if is_refusal(task):
        assert not writes, "a refusal's reference makes no write"
        assert final == rep["untouched"]
        return
    assert writes, "a task that changes nothing must be marked refusal"
    assert failing(task, rep["untouched"]), "vacuous: the untouched state passes every verifier"
    for i in writes:  # every state short of a write the reference makes
        before = rep["states"][i - 1] if i else rep["untouched"]
        assert failing(task, before), f"the state before call {i} ({task['calls'][i]['tool']}) passes every verifier"


@pytest.mark.parametrize("name", sorted(TASK_RECORDS))
def test_every_mutant_of_the_oracle_end_state_fails(name, report):
    task, rep = TASK_RECORDS[name], report[name]
    assert "error" not in rep, rep.get("error")
    if is_refusal(task):
        assert rep["mutants"] == []  # nothing written, nothing to mutate
        return
    assert rep["mutants"], "the oracle wrote nothing"
    survivors = [m["label"] for m in rep["mutants"] if not failing(task, m["results"])]
    assert not survivors, f"{len(survivors)} of {len(rep['mutants'])} mutants pass every verifier: {survivors[:12]}"
