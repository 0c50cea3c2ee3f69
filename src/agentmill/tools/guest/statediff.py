"""'Nothing else changed', in the sandbox (stdlib only): end states against the reference's.

  statediff.py REQUEST.json --out REPLY.json

REQUEST: {"toolhost": path of toolhost.py, "spec": the tool host's spec (gyms with "db" = the
untouched state built from the task's seed), "calls": the reference calls, "work": a scratch dir,
"ignore": ["table", "table.col"], "finals": {label: dir}} (databases are `<dir>/<gym>.sqlite`).

The reference calls are replayed twice from the untouched state (two copies); the first copy is the
reference end state. Bookkeeping is decided by what the tools write on their own, never by a name:

  - a field whose value differs between the two replays (a random id, a wall-clock stamp),
  - a field the replay wrote with the time of the write itself (a date-time within the replay's
    wall-clock window: `datetime('now')`, `time.time()`),
  - what the task lists in `ignore` (task.toml [metadata] mutation_ignore).

A gym's own clock (a `now` row the tools read) is deterministic and so not bookkeeping.

Each final state is then diffed against the untouched one, and every change the reference did not
make is a violation: a field of an existing row the reference left alone, a row the reference did
not delete, more new rows in a table than the reference made there, a table added or dropped.
Changes the reference made are the task's to check (its verifiers); leaving them undone is not a
violation here. REPLY: {"bookkeeping": [[gym, table, col]], "reference_dir": dir,
"violations": {label: [text, ...]}, "reference_diff": {gym: {table: {inserted, updated, deleted}}}}.
"""

import calendar
import importlib.util
import json
import os
import re
import shutil
import sqlite3
import sys
import time

_DATETIME = re.compile(r"^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})")
_SLACK = 2.0  # seconds either side of the replay's window


def tables(db, schema="main"):
    return [r[0] for r in db.execute(
        f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]


def _q(name):
    return '"' + name.replace('"', '""') + '"'


def diff(before_path, after_path, only=None):
    """{table: {"key", "inserted": {key: row}, "updated": {key: {col: [old, new]}}, "deleted": [key]}}; "+"/"-" for tables.

    SQLite finds the rows that differ (EXCEPT, both ways); only those reach Python."""
    db = sqlite3.connect(f"file:{after_path}?mode=ro", uri=True)
    try:
        db.execute("ATTACH DATABASE ? AS b", (f"file:{before_path}?mode=ro",))
        after, before = tables(db), tables(db, "b")
        out = {t: {"table": "+"} for t in after if t not in before}
        out.update({t: {"table": "-"} for t in before if t not in after})
        for table in (t for t in after if t in before and (only is None or t in only)):
            info = db.execute(f"PRAGMA main.table_info({_q(table)})").fetchall()
            pk = [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5] > 0] or ["rowid"]
            cols = [r[1] for r in info]
            sel = ", ".join(_q(c) for c in pk + cols)
            new = {tuple(r[:len(pk)]): dict(zip(cols, r[len(pk):])) for r in db.execute(
                f"SELECT {sel} FROM main.{_q(table)} EXCEPT SELECT {sel} FROM b.{_q(table)}")}
            old = {tuple(r[:len(pk)]): dict(zip(cols, r[len(pk):])) for r in db.execute(
                f"SELECT {sel} FROM b.{_q(table)} EXCEPT SELECT {sel} FROM main.{_q(table)}")}
            entry = {"key": pk, "inserted": {}, "updated": {}, "deleted": [k for k in old if k not in new]}
            for k, row in new.items():
                if k in old:
                    entry["updated"][k] = {c: [old[k].get(c), v] for c, v in row.items() if old[k].get(c) != v}
                else:
                    entry["inserted"][k] = row
            entry["updated"] = {k: v for k, v in entry["updated"].items() if v}
            if entry["inserted"] or entry["updated"] or entry["deleted"]:
                out[table] = entry
        return out
    finally:
        db.close()


def _epoch(value):
    """A value as seconds since the epoch when it reads as a date-time (UTC), else None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 1e9 < value < 1e10:
        return float(value)
    if isinstance(value, str):
        m = _DATETIME.match(value)
        if m:
            try:
                return float(calendar.timegm(time.strptime(f"{m.group(1)} {m.group(2)}", "%Y-%m-%d %H:%M:%S")))
            except ValueError:
                return None
    return None


def _is_write_time(value, window):
    t = _epoch(value)
    if t is None:
        return False
    start, end = window
    offsets = {0.0, -float(time.timezone), -float(time.altzone)}  # written in UTC or in local time
    return any(start - _SLACK + off <= t <= end + _SLACK + off for off in offsets)


def bookkeeping(d_ref, d_twin, window, ignore):
    """{table: {col}} of one gym: the fields the tools write on their own (see the module doc).

    d_ref: untouched -> reference; d_twin: reference -> its twin (the same calls replayed again)."""
    out = {}
    for table, entry in d_ref.items():
        if "table" in entry:
            continue
        cols = out.setdefault(table, set())
        written = list(entry["inserted"].values()) + [{c: v[1] for c, v in ch.items()} for ch in entry["updated"].values()]
        for row in written:
            cols.update(c for c, v in row.items() if _is_write_time(v, window))
    for table, entry in d_twin.items():
        if "table" in entry:
            continue
        cols = out.setdefault(table, set())
        for changed in entry["updated"].values():
            cols.update(changed)
        if entry["inserted"] or entry["deleted"]:  # keys allocated at random
            cols.update(entry["key"])
    for item in ignore:
        table, _, col = item.partition(".")
        out.setdefault(table, set()).add(col or "*")  # "*": the whole table
    return {t: c for t, c in out.items() if c}


def violations(d_ref, d_final, keep):
    """What the final state changed that the reference did not (bookkeeping fields aside)."""
    out = []
    for table, entry in d_final.items():
        skip = keep.get(table, set())
        if "*" in skip:
            continue
        if "table" in entry:
            out.append(f"table {table} {'added' if entry['table'] == '+' else 'dropped'}")
            continue
        ref = d_ref.get(table, {"inserted": {}, "updated": {}, "deleted": []})
        for k, changed in entry["updated"].items():
            allowed = set(ref.get("updated", {}).get(k, {}))
            extra = sorted(c for c in changed if c not in allowed and c not in skip)
            if extra:
                desc = ", ".join(f"{c}: {json.dumps(changed[c][0], default=str)[:40]} -> "
                                 f"{json.dumps(changed[c][1], default=str)[:40]}" for c in extra)
                out.append(f"{table} {_key(entry['key'], k)} changed ({desc}), which the task does not change")
        deleted = set(map(tuple, ref.get("deleted", [])))
        for k in entry["deleted"]:
            if tuple(k) not in deleted:
                out.append(f"{table} {_key(entry['key'], k)} deleted, which the task does not delete")
        made, allowed = len(entry["inserted"]), len(ref.get("inserted", {}))
        if made > allowed:
            out.append(f"{table}: {made} new rows where the task makes {allowed}")
    return out


def _key(cols, key):
    return json.dumps(dict(zip(cols, key)), default=str)


def _load_toolhost(path):
    spec = importlib.util.spec_from_file_location("agentmill_toolhost", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _replay(toolhost, tools, spec, db_dir, calls):
    """Copy the untouched databases into db_dir and apply the calls there; the replay's wall-clock window."""
    os.makedirs(db_dir, exist_ok=True)
    gyms = [{**g, "db": os.path.join(db_dir, g["name"] + ".sqlite")} for g in spec["gyms"]]
    for g, new in zip(spec["gyms"], gyms):
        shutil.copyfile(g["db"], new["db"])
    local = {**spec, "gyms": gyms, "call_log": None}
    start = time.time()
    results = [toolhost.call(tools, local, {"name": c["tool"], "arguments": c["arguments"]}) for c in calls]
    return (start, time.time()), results


def run(req):
    with open(req["spec"], encoding="utf-8") as f:
        spec = json.load(f)
    toolhost = _load_toolhost(req["toolhost"])
    tools = toolhost.load_all(spec)
    calls = req.get("calls") or []
    ref_dir, twin_dir = os.path.join(req["work"], "reference"), os.path.join(req["work"], "reference-twin")
    window, results = _replay(toolhost, tools, spec, ref_dir, calls)
    _replay(toolhost, tools, spec, twin_dir, calls)
    keep, d_refs = {}, {}
    gyms = [g["name"] for g in spec["gyms"]]
    initial = {g["name"]: g["db"] for g in spec["gyms"]}
    for g in gyms:
        ref = os.path.join(ref_dir, g + ".sqlite")
        d_refs[g] = diff(initial[g], ref)
        # nondeterminism matters only where the reference writes: elsewhere any change is a violation anyway
        twin = diff(ref, os.path.join(twin_dir, g + ".sqlite"), only=set(d_refs[g]))
        keep[g] = bookkeeping(d_refs[g], twin, window, req.get("ignore", []))
    out = {}
    for label, final_dir in (req.get("finals") or {}).items():
        found = []
        for g in gyms:
            path = os.path.join(final_dir, g + ".sqlite")
            if not os.path.isfile(path):
                found.append(f"gym {g}: no database")
                continue
            found += [f"{g}.{v}" for v in violations(d_refs[g], diff(initial[g], path), keep[g])]
        out[label] = found
    return {"bookkeeping": sorted([g, t, c] for g in gyms for t, cols in keep[g].items() for c in cols),
            "reference_dir": ref_dir, "violations": out,
            "replay_errors": [i for i, r in enumerate(results) if r.get("is_error")],
            "reference_diff": {g: {t: ({"table": e["table"]} if "table" in e else
                                       {"inserted": len(e["inserted"]), "updated": len(e["updated"]),
                                        "deleted": len(e["deleted"])}) for t, e in d.items()} for g, d in d_refs.items()}}


def main(argv):
    out = argv[argv.index("--out") + 1] if "--out" in argv else None
    with open(argv[1], encoding="utf-8") as f:
        req = json.load(f)
    try:
        reply = run(req)
    except Exception as e:  # noqa: BLE001 - one clear line for the host
        reply = {"error": f"{type(e).__name__}: {e}"}
    text = json.dumps(reply, default=str)
    if out is None:
        print(text)
        return 0
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.rename(out + ".tmp", out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
