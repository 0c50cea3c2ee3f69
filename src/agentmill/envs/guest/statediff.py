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


def tables(db):
    return [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]


def rows_by_key(db, table):
    info = db.execute(f'PRAGMA table_info("{table}")').fetchall()
    pk = [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5] > 0]
    cols = [r[1] for r in info]
    key_sql = ", ".join(f'"{c}"' for c in pk) if pk else "rowid"
    n = len(pk) if pk else 1
    return pk or ["rowid"], {tuple(r[:n]): dict(zip(cols, r[n:])) for r in db.execute(f'SELECT {key_sql}, * FROM "{table}"')}


def snapshot(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {t: rows_by_key(db, t) for t in tables(db)}
    finally:
        db.close()


def diff(before, after):
    """{table: {"key", "inserted": {key: row}, "updated": {key: {col: [old, new]}}, "deleted": [key]}}; "+"/"-" for tables."""
    out = {}
    for table in sorted(set(before) | set(after)):
        if table not in before or table not in after:
            out[table] = {"table": "+" if table in after else "-"}
            continue
        key, rows_b = before[table]
        rows_a = after[table][1]
        entry = {"key": key, "inserted": {}, "updated": {}, "deleted": []}
        for k, row in rows_a.items():
            if k not in rows_b:
                entry["inserted"][k] = row
            else:
                changed = {c: [rows_b[k].get(c), v] for c, v in row.items() if rows_b[k].get(c) != v}
                if changed:
                    entry["updated"][k] = changed
        entry["deleted"] = [k for k in rows_b if k not in rows_a]
        if entry["inserted"] or entry["updated"] or entry["deleted"]:
            out[table] = entry
    return out


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


def bookkeeping(initial, ref_a, ref_b, window, ignore):
    """{table: {col}} of one gym: the fields the tools write on their own (see the module doc)."""
    out = {}
    for table, entry in diff(initial, ref_a).items():
        if "table" in entry:
            continue
        cols = out.setdefault(table, set())
        written = list(entry["inserted"].values()) + [{c: v[1] for c, v in ch.items()} for ch in entry["updated"].values()]
        for row in written:
            cols.update(c for c, v in row.items() if _is_write_time(v, window))
        if table in ref_b:
            other = ref_b[table][1]
            for k, row in ref_a[table][1].items():
                if k in other:
                    cols.update(c for c, v in row.items() if other[k].get(c) != v)
            if set(ref_a[table][1]) != set(other):  # keys allocated at random
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
    initial = {g["name"]: snapshot(g["db"]) for g in spec["gyms"]}
    ref = {g: snapshot(os.path.join(ref_dir, g + ".sqlite")) for g in gyms}
    for g in gyms:
        twin = snapshot(os.path.join(twin_dir, g + ".sqlite"))
        keep[g] = bookkeeping(initial[g], ref[g], twin, window, req.get("ignore", []))
        d_refs[g] = diff(initial[g], ref[g])
    out = {}
    for label, final_dir in (req.get("finals") or {}).items():
        found = []
        for g in gyms:
            path = os.path.join(final_dir, g + ".sqlite")
            if not os.path.isfile(path):
                found.append(f"gym {g}: no database")
                continue
            found += [f"{g}.{v}" for v in violations(d_refs[g], diff(initial[g], snapshot(path)), keep[g])]
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
