"""Negative verification, in the sandbox (stdlib only): wrong end states made from the oracle's.

  mutants.py REQUEST.json  ->  {"mutants": [{name, description, dir, side_effect}], "scrambles": [...], "diff": {...}}

REQUEST: {"gyms": [names], "initial": dir, "final": dir, "out": dir, "bookkeeping": [[gym, table, col]],
"argument_values": [json], "max_fields": n, "max_records": n}. Databases are `<dir>/<gym>.sqlite`.
Each mutant is a directory of databases: the oracle's end state with one thing wrong.

  change_field:<gym>.<table>.<col>=<value>  one written field set to another value its domain allows:
                                            every value of a CHECK (... IN (...)) list or BETWEEN range,
                                            every parent key of a foreign key, every value an enum-like
                                            column holds, a date-time a day or an hour off
  wrong_record:<gym>.<table>                the right change applied to a different record
  extra_write:<gym>.<table>                 the right change, plus one field of a record the reference
                                            left alone set to another value of its domain
  extra_row:<gym>.<table>                   the right change, plus a copy of a row the reference made

A change_field mutant of a field whose value no reference call chose (the tool set it on its own,
e.g. assign also moving a ticket to in_progress) is marked `side_effect`. Bookkeeping (the fields
the tools write on their own, decided by tools/guest/statediff.py from two replays) is never
mutated. Scrambles (every table's rows rotated; every table emptied) are no mutants: a verifier
that passes on them too passes on anything.
"""

import json
import os
import re
import shutil
import sqlite3
import sys

_DATETIME = re.compile(r"^(\d{4}-\d{2}-\d{2})([ T])(\d{2}:\d{2}(:\d{2})?)(.*)$")
_ENUM_LIKE = 12  # a column with at most this many distinct values is tried with every one of them
_PER_FIELD = 16  # values tried per field


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


def bookkeeping(req, gym, table, col):
    marks = req.get("_bk")
    if marks is None:
        marks = req["_bk"] = {(g, t): set() for g, t, _ in req.get("bookkeeping", [])}
        for g, t, c in req.get("bookkeeping", []):
            marks[(g, t)].add(c)
    cols = marks.get((gym, table), set())
    return "*" in cols or col in cols


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


def check_values(db, table, col):
    """The values a CHECK constraint on the column lists (IN (...)) or spans (BETWEEN a AND b)."""
    row = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
    sql = row[0] if row and row[0] else ""
    name = r'["`\[]?' + re.escape(col) + r'["`\]]?'
    out = []
    for m in re.finditer(name + r"\s+IN\s*\(([^)]*)\)", sql, re.IGNORECASE):
        for lit in re.findall(r"'((?:[^']|'')*)'|(-?\d+(?:\.\d+)?)", m.group(1)):
            out.append(lit[0].replace("''", "'") if lit[0] or not lit[1] else (float(lit[1]) if "." in lit[1] else int(lit[1])))
    for m in re.finditer(name + r"\s+BETWEEN\s+(-?\d+)\s+AND\s+(-?\d+)", sql, re.IGNORECASE):
        lo, hi = int(m.group(1)), int(m.group(2))
        if hi - lo <= 20:
            out += list(range(lo, hi + 1))
    return out


def parent_values(db, table, col):
    out = []
    for fk in db.execute(f'PRAGMA foreign_key_list("{table}")').fetchall():
        if fk[3] == col:
            parent, parent_col = fk[2], fk[4] or "rowid"
            out += [r[0] for r in db.execute(f'SELECT DISTINCT "{parent_col}" FROM "{parent}" LIMIT 40')]
    return out


def shifted(value):
    """A date-time a day and an hour either way, in the same format."""
    m = _DATETIME.match(value)
    if not m:
        return []
    import datetime
    fmt = "%Y-%m-%d" + m.group(2) + ("%H:%M:%S" if m.group(4) else "%H:%M")
    try:
        t = datetime.datetime.strptime(m.group(1) + m.group(2) + m.group(3), fmt)
    except ValueError:
        return []
    return [(t + d).strftime(fmt) + m.group(5) for d in (datetime.timedelta(days=1), datetime.timedelta(days=-1),
                                                         datetime.timedelta(hours=1))]


def candidates(db, table, col, current):
    """Every other value the column's domain allows: CHECK lists and ranges, foreign keys, the values an
    enum-like column holds (a free-text column: its most common few), shifted date-times, nearby values."""
    held = [r[0] for r in db.execute(
        f'SELECT "{col}", COUNT(*) AS n FROM "{table}" WHERE "{col}" IS NOT NULL GROUP BY 1 ORDER BY n DESC LIMIT 50')]
    domain = check_values(db, table, col) + parent_values(db, table, col)
    out = domain + (held if len(held) <= _ENUM_LIKE else held[:3])
    if isinstance(current, str):
        out += shifted(current)
    if isinstance(current, bool) or current is None:
        pass
    elif isinstance(current, int):
        out += [current + 1, current - 1]
    elif isinstance(current, float):
        out += [current + 1.0]
    elif isinstance(current, str):
        out += ["mutated value", ""]
    seen, unique = set(), []
    for v in out:
        k = json.dumps(v)
        if v != current and k not in seen:
            seen.add(k)
            unique.append(v)
    return unique[:_PER_FIELD]


def column_default(db, table, col):
    """The column's declared DEFAULT as a value (a literal only), else a marker no value equals."""
    for row in db.execute(f'PRAGMA table_info("{table}")'):
        if row[1] == col and row[4] is not None:
            text = row[4].strip()
            if text.startswith("'") and text.endswith("'"):
                return text[1:-1].replace("''", "'")
            try:
                return float(text) if "." in text else int(text)
            except ValueError:
                break
    return object()


def chosen(req, value):
    """Whether a reference call chose this value (an argument, or text an argument carries)."""
    values = req.setdefault("_chosen", [json.loads(v) for v in req.get("argument_values", [])])
    if value in values:
        return True
    return isinstance(value, str) and len(value) >= 4 and any(
        isinstance(a, str) and len(a) >= 4 and (a in value or value in a) for a in values)


def field_mutants(req, d, out_dir, limit):
    """One mutant per other value of each written field's domain (at most `limit` fields)."""
    made, seen = [], set()
    for gym, tabs in d.items():
        for table, entry in tabs.items():
            changes = [(k, {c: v[1] for c, v in ch.items()}, False) for k, ch in entry["updated"]]
            # a new record's defaults and computed fields are the tool's doing: mutate only the
            # fields that carry a value the reference calls chose
            changes += [(k, {c: v for c, v in row.items() if chosen(req, v)}, True) for k, row in entry["inserted"]]
            for key, cols, new_row in changes:
                for col, value in cols.items():
                    if col in entry["key"] or (table, col) in seen or bookkeeping(req, gym, table, col):
                        continue
                    if len(seen) >= limit:
                        return made
                    seen.add((table, col))
                    side_effect = not new_row and not chosen(req, value)
                    db = sqlite3.connect(os.path.join(req["final"], f"{gym}.sqlite"))
                    options = candidates(db, table, col, value)
                    if new_row:  # a new row's column default is an optional argument left out: another path, not a wrong state
                        options = [o for o in options if o != column_default(db, table, col)]
                    db.close()
                    for option in options:
                        target = os.path.join(out_dir, f"m{len(made)}-field")
                        copy_state(req["final"], target, req["gyms"])
                        if try_update(os.path.join(target, f"{gym}.sqlite"), table, entry["key"], key, {col: option}):
                            made.append({"name": f"change_field:{gym}.{table}.{col}={json.dumps(option)[:40]}",
                                         "dir": target, "side_effect": side_effect, "description":
                                         f"{table}.{col} of {dict(zip(entry['key'], key))} is {json.dumps(option)[:60]} "
                                         f"instead of {json.dumps(value)[:60]}"
                                         + (" (a value the tool set on its own)" if side_effect else "")})
                        else:
                            shutil.rmtree(target, ignore_errors=True)
    return made


def extra_mutants(req, d, out_dir):
    """The right change plus one write elsewhere: a record the reference left alone changed, a junk row."""
    made = []
    for gym, tabs in d.items():
        for table, entry in tabs.items():
            if bookkeeping(req, gym, table, "*"):
                continue
            path = os.path.join(req["final"], f"{gym}.sqlite")
            db = sqlite3.connect(path)
            touched = {tuple(k) for k, _ in entry["updated"]} | {tuple(k) for k, _ in entry["inserted"]}
            key_sql = ", ".join(f'"{c}"' for c in entry["key"])
            others = [tuple(r) for r in db.execute(f'SELECT {key_sql} FROM "{table}" LIMIT 50') if tuple(r) not in touched]
            cols = [r[1] for r in db.execute(f'PRAGMA table_info("{table}")') if r[1] not in entry["key"]
                    and not bookkeeping(req, gym, table, r[1])]
            done = False
            for other in others[:5]:
                if done:
                    break
                row = db.execute(f'SELECT * FROM "{table}" WHERE {where(entry["key"], other)[0]}', list(other)).fetchone()
                current = dict(zip([r[1] for r in db.execute(f'PRAGMA table_info("{table}")')], row))
                for col in cols:
                    for option in candidates(db, table, col, current[col])[:4]:
                        target = os.path.join(out_dir, f"m{len(made)}-extra")
                        copy_state(req["final"], target, req["gyms"])
                        if try_update(os.path.join(target, f"{gym}.sqlite"), table, entry["key"], list(other), {col: option}):
                            made.append({"name": f"extra_write:{gym}.{table}", "dir": target, "side_effect": False,
                                         "description": f"the right change, and {table}.{col} of "
                                         f"{dict(zip(entry['key'], other))} set to {json.dumps(option)[:60]}"})
                            done = True
                            break
                        shutil.rmtree(target, ignore_errors=True)
                    if done:
                        break
            db.close()
            if entry["inserted"]:
                target = os.path.join(out_dir, f"m{len(made)}-extra")
                copy_state(req["final"], target, req["gyms"])
                if _copy_row(os.path.join(target, f"{gym}.sqlite"), table, entry):
                    made.append({"name": f"extra_row:{gym}.{table}", "dir": target, "side_effect": False,
                                 "description": f"the right change, and a second copy of the new {table} row"})
                else:
                    shutil.rmtree(target, ignore_errors=True)
    return made


def _copy_row(path, table, entry):
    """Insert a copy of the first new row, its key left to the database (or made unique)."""
    key, row = entry["inserted"][0]
    cols = [c for c in row if c not in entry["key"] or len(entry["key"]) > 1 or entry["key"] == ["rowid"]]
    values = {c: row[c] for c in cols if c != "rowid"}
    db = sqlite3.connect(path)
    try:
        for attempt in range(2):
            if attempt == 1 and len(entry["key"]) == 1 and isinstance(key[0], str):
                values[entry["key"][0]] = key[0] + "-copy"
            try:
                names = ", ".join(f'"{c}"' for c in values)
                db.execute(f'INSERT INTO "{table}" ({names}) VALUES ({", ".join("?" for _ in values)})', list(values.values()))
                db.commit()
                return True
            except sqlite3.Error:
                db.rollback()
        return False
    finally:
        db.close()


def _rotate(db, table):
    """Every row keeps its key and takes the next row's other fields (re-inserted: UNIQUE columns too)."""
    pk, cols = key_columns(db, table)
    rest = [c for c in cols if c not in pk]
    keys = pk or ["rowid"]
    rows = db.execute(f'SELECT {", ".join(_q(c) for c in keys)}, {", ".join(_q(c) for c in rest)} FROM "{table}" '
                      f'ORDER BY {", ".join(_q(c) for c in keys)}').fetchall() if rest else []
    if len(rows) < 2:
        return
    n = len(keys)
    db.execute(f'DELETE FROM "{table}"')
    names = ", ".join(_q(c) for c in [*keys, *rest])
    for row, nxt in zip(rows, rows[1:] + rows[:1]):
        db.execute(f'INSERT INTO "{table}" ({names}) VALUES ({", ".join("?" for _ in range(n + len(rest)))})',
                   [*row[:n], *nxt[n:]])


def _q(col):
    return '"' + col.replace('"', '""') + '"'


def scrambles(req, out_dir):
    """Two states no sound verifier can pass: every table's rows rotated by one (each record gets its
    neighbour's fields, constraints kept), and every table emptied."""
    out = []
    rotated, empty = os.path.join(out_dir, "scramble-rotated"), os.path.join(out_dir, "scramble-empty")
    copy_state(req["final"], rotated, req["gyms"])
    copy_state(req["final"], empty, req["gyms"])
    for gym in req["gyms"]:
        for path, kind in ((os.path.join(rotated, f"{gym}.sqlite"), "rotate"), (os.path.join(empty, f"{gym}.sqlite"), "empty")):
            db = sqlite3.connect(path)
            db.execute("PRAGMA foreign_keys = OFF")
            db.isolation_level = None  # savepoints by hand: one table's failure keeps the others
            db.execute("BEGIN")
            for table in tables(db):
                db.execute("SAVEPOINT t")
                try:
                    if kind == "empty":
                        db.execute(f'DELETE FROM "{table}"')
                    else:
                        _rotate(db, table)
                    db.execute("RELEASE t")
                except sqlite3.Error:
                    db.execute("ROLLBACK TO t")
                    db.execute("RELEASE t")
            db.execute("COMMIT")
            db.close()
    out += [{"name": "scramble:rotated", "dir": rotated}, {"name": "scramble:empty", "dir": empty}]
    return out


def record_mutants(req, d, out_dir, limit):
    made = []
    for gym, tabs in d.items():
        for table, entry in tabs.items():
            if len(made) >= limit or bookkeeping(req, gym, table, "*"):
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
    for m in mutants:
        m.setdefault("side_effect", False)
    mutants += extra_mutants(req, d, out_dir)
    summary = {g: {t: {k: len(v) for k, v in e.items() if k != "key"} for t, e in tabs.items()} for g, tabs in d.items()}
    text = json.dumps({"mutants": mutants, "scrambles": scrambles(req, out_dir), "diff": summary}, default=str)
    if out is None:
        print(text)
    else:
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    args = sys.argv[1:]
    main(args[0], args[args.index("--out") + 1] if "--out" in args else None)
