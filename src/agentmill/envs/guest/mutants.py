"""Negative verification, in the sandbox (stdlib only): wrong end states made from the oracle's.

  mutants.py REQUEST.json  ->  {"mutants": [{name, description, dir}], "diff": {...}}

REQUEST: {"gyms": [names], "initial": dir, "final": dir, "out": dir, "ignore": ["table", "table.col"],
"max_fields": n, "max_records": n}. Databases are `<dir>/<gym>.sqlite`. Each mutant is a directory
of databases: the oracle's end state with one thing wrong.

  change_field:<gym>.<table>.<col>   one written field set to another value the database accepts
  wrong_record:<gym>.<table>         the right change applied to a different record

Bookkeeping is not mutated: tables named like audit/log/history, timestamp columns (`*_at`, dates),
and whatever the task lists in `ignore` (task.toml [metadata] mutation_ignore).
"""

import json
import os
import re
import shutil
import sqlite3
import sys

_BOOKKEEPING_TABLE = re.compile(r"(audit|_log$|^log|history|journal|events?$)", re.I)
_BOOKKEEPING_COL = re.compile(r"(_at$|_on$|^created|^updated|^modified|timestamp|_time$|^date|_date$)", re.I)
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?")


def tables(db):
    return [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]


def key_columns(db, table):
    info = db.execute(f'PRAGMA table_info("{table}")').fetchall()
    pk = [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5] > 0]
    return pk, [r[1] for r in info]


def rows_by_key(db, table):
    pk, cols = key_columns(db, table)
    key_sql = ", ".join(f'"{c}"' for c in pk) if pk else "rowid"
    out = {}
    for row in db.execute(f'SELECT {key_sql}, * FROM "{table}"'):
        n = len(pk) if pk else 1
        out[tuple(row[:n])] = dict(zip(cols, row[n:]))
    return pk or ["rowid"], out


def diff(initial, final):
    """{table: {"key": [...], "inserted": [[key, row]], "updated": [[key, {col: [old, new]}]], "deleted": [key]}}"""
    out = {}
    for table in tables(final):
        key, after = rows_by_key(final, table)
        before = rows_by_key(initial, table)[1] if table in tables(initial) else {}
        entry = {"key": key, "inserted": [], "updated": [], "deleted": []}
        for k, row in after.items():
            if k not in before:
                entry["inserted"].append([list(k), row])
            else:
                changed = {c: [before[k].get(c), v] for c, v in row.items() if before[k].get(c) != v}
                if changed:
                    entry["updated"].append([list(k), changed])
        entry["deleted"] = [list(k) for k in before if k not in after]
        if entry["inserted"] or entry["updated"] or entry["deleted"]:
            out[table] = entry
    return out


def bookkeeping(table, col, value, ignore):
    if table in ignore or f"{table}.{col}" in ignore or _BOOKKEEPING_TABLE.search(table):
        return True
    return bool(_BOOKKEEPING_COL.search(col) or (isinstance(value, str) and _DATETIME.match(value)))


def where(key_cols, key):
    return " AND ".join(f'"{c}" IS ?' for c in key_cols), list(key)


def copy_state(src, dst, gyms):
    os.makedirs(dst, exist_ok=True)
    for g in gyms:
        shutil.copyfile(os.path.join(src, f"{g}.sqlite"), os.path.join(dst, f"{g}.sqlite"))


def try_update(path, table, key_cols, key, values):
    """Apply one UPDATE in its own transaction; False if the database refuses it."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA foreign_keys = ON")
    try:
        clause, params = where(key_cols, key)
        sets = ", ".join(f'"{c}" = ?' for c in values)
        cur = db.execute(f'UPDATE "{table}" SET {sets} WHERE {clause}', [*values.values(), *params])
        if cur.rowcount != 1:
            db.rollback()
            return False
        db.commit()
        return True
    except sqlite3.Error:
        db.rollback()
        return False
    finally:
        db.close()


def candidates(db, table, col, current):
    """Other values of the same column, most common first; then a nearby value of the same type."""
    vals = [r[0] for r in db.execute(
        f'SELECT "{col}", COUNT(*) AS n FROM "{table}" WHERE "{col}" IS NOT NULL GROUP BY 1 ORDER BY n DESC LIMIT 50')]
    out = [v for v in vals if v != current]
    if isinstance(current, bool) or current is None:
        pass
    elif isinstance(current, int):
        out += [current + 1, current - 1]
    elif isinstance(current, float):
        out += [current + 1.0]
    elif isinstance(current, str):
        out += ["mutated value", ""]
    return out[:12]


def field_mutants(req, d, out_dir, limit):
    made, seen = [], set()
    for gym, tabs in d.items():
        for table, entry in tabs.items():
            changes = [(k, {c: v[1] for c, v in ch.items()}) for k, ch in entry["updated"]]
            # a new record's defaults and computed fields are the tool's doing: mutate only the
            # fields that carry a value the reference calls chose
            chosen = set(req.get("argument_values", []))
            changes += [(k, {c: v for c, v in row.items() if json.dumps(v) in chosen}) for k, row in entry["inserted"]]
            for key, cols in changes:
                for col, value in cols.items():
                    if len(made) >= limit:
                        return made
                    if col in entry["key"] or (table, col) in seen or bookkeeping(table, col, value, req["ignore"]):
                        continue
                    seen.add((table, col))
                    name = f"change_field:{gym}.{table}.{col}"
                    target = os.path.join(out_dir, f"m{len(made)}-field")
                    copy_state(req["final"], target, req["gyms"])
                    path = os.path.join(target, f"{gym}.sqlite")
                    db = sqlite3.connect(path)
                    options = candidates(db, table, col, value)
                    db.close()
                    for option in options:
                        if try_update(path, table, entry["key"], key, {col: option}):
                            made.append({"name": name, "dir": target, "description":
                                         f"{table}.{col} of {dict(zip(entry['key'], key))} is {json.dumps(option)[:60]} "
                                         f"instead of {json.dumps(value)[:60]}"})
                            break
                    else:
                        shutil.rmtree(target, ignore_errors=True)
    return made


def record_mutants(req, d, out_dir, limit):
    made = []
    for gym, tabs in d.items():
        for table, entry in tabs.items():
            if len(made) >= limit or _BOOKKEEPING_TABLE.search(table) or table in req["ignore"]:
                continue
            target = os.path.join(out_dir, f"m{len(made)}-record")
            copy_state(req["final"], target, req["gyms"])
            path = os.path.join(target, f"{gym}.sqlite")
            ok = False
            if entry["updated"]:
                ok = _move_update(path, req, gym, table, entry)
            elif entry["inserted"]:
                ok = _repoint_insert(path, table, entry)
            if ok:
                made.append({"name": f"wrong_record:{gym}.{table}", "dir": target, "description": ok})
            else:
                shutil.rmtree(target, ignore_errors=True)
    return made


def _move_update(path, req, gym, table, entry):
    """Undo the first updated row's change and make the same change to another row."""
    key, changed = entry["updated"][0]
    old = {c: v[0] for c, v in changed.items()}
    new = {c: v[1] for c, v in changed.items()}
    initial = sqlite3.connect(os.path.join(req["initial"], f"{gym}.sqlite"))
    key_sql = ", ".join(f'"{c}"' for c in entry["key"])
    touched = {tuple(k) for k, _ in entry["updated"]}
    # prefer a record that looked like the right one before the change (same old values)
    conds = " AND ".join(f'"{c}" IS ?' for c in old)
    others = [tuple(r) for r in initial.execute(f'SELECT {key_sql} FROM "{table}" WHERE {conds} LIMIT 20', list(old.values()))]
    others += [tuple(r) for r in initial.execute(f'SELECT {key_sql} FROM "{table}" LIMIT 20')]
    initial.close()
    for other in others:
        if other == tuple(key) or other in touched:
            continue
        if not try_update(path, table, entry["key"], key, old):
            return False
        if try_update(path, table, entry["key"], list(other), new):
            return (f"the change to {table} {dict(zip(entry['key'], key))} applied to {dict(zip(entry['key'], other))} instead")
        try_update(path, table, entry["key"], key, new)  # put it back and try the next record
    return False


def _repoint_insert(path, table, entry):
    """Attach the first inserted row to a different parent record (its foreign key)."""
    db = sqlite3.connect(path)
    try:
        fks = db.execute(f'PRAGMA foreign_key_list("{table}")').fetchall()
        key, row = entry["inserted"][0]
        for fk in fks:
            parent, col, parent_col = fk[2], fk[3], fk[4] or "rowid"
            current = row.get(col)
            if current is None:
                continue
            others = [r[0] for r in db.execute(f'SELECT "{parent_col}" FROM "{parent}" WHERE "{parent_col}" IS NOT ? LIMIT 10', (current,))]
            for other in others:
                if try_update(path, table, entry["key"], key, {col: other}):
                    return f"the new {table} row points at {parent} {json.dumps(other)} instead of {json.dumps(current)}"
        return False
    finally:
        db.close()


def main(req_path, out=None):
    with open(req_path, encoding="utf-8") as f:
        req = json.load(f)
    req.setdefault("ignore", [])
    d = {}
    for gym in req["gyms"]:
        initial = sqlite3.connect(f"file:{os.path.join(req['initial'], gym + '.sqlite')}?mode=ro", uri=True)
        final = sqlite3.connect(f"file:{os.path.join(req['final'], gym + '.sqlite')}?mode=ro", uri=True)
        d[gym] = diff(initial, final)
        initial.close()
        final.close()
    out_dir = req["out"]
    os.makedirs(out_dir, exist_ok=True)
    mutants = field_mutants(req, d, out_dir, req.get("max_fields", 8))
    mutants += record_mutants(req, d, out_dir, req.get("max_records", 4))
    summary = {g: {t: {k: len(v) for k, v in e.items() if k != "key"} for t, e in tabs.items()} for g, tabs in d.items()}
    text = json.dumps({"mutants": mutants, "diff": summary}, default=str)
    if out is None:
        print(text)
    else:
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    args = sys.argv[1:]
    main(args[0], args[args.index("--out") + 1] if "--out" in args else None)
