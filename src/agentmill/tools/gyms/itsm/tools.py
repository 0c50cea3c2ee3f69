"""itsm gym tools: an IT service desk over SQLite.

Every public function whose first parameter is `db` is a tool. This file runs inside the trial's
sandbox with the system python3 and the standard library only. The agent acts as the user named by
`itsm_context.current_user`; the clock is `itsm_context.now`, so every write is deterministic.
Tools check the business rules, raise ValueError/PermissionError with a message the model sees,
commit their writes as one transaction and record every changed field in `audit_log`.
"""

import sqlite3
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Literal, Optional

Impact = Literal["high", "medium", "low"]
Category = Literal["hardware", "software", "network", "access", "email", "database", "security", "other"]
STAFF_ROLES = ("agent", "manager", "admin")
CAB_GROUP = "GRP012"
PRIORITY = {("high", "high"): 1, ("high", "medium"): 2, ("medium", "high"): 2, ("high", "low"): 3,
            ("medium", "medium"): 3, ("low", "high"): 3, ("medium", "low"): 4, ("low", "medium"): 4, ("low", "low"): 5}
INCIDENT_MOVES = {"new": {"in_progress", "on_hold", "canceled"}, "in_progress": {"on_hold", "canceled"},
                  "on_hold": {"in_progress", "canceled"}}
PROBLEM_MOVES = {"new": {"root_cause_analysis"}, "root_cause_analysis": {"fix_in_progress"}}
TABLES = {"INC": ("incidents", "number"), "PRB": ("problems", "number"), "CHG": ("change_requests", "number"),
          "KB": ("kb_articles", "number")}
FINAL = {"closed", "canceled", "retired"}


# -- helpers (private: not tools) ------------------------------------------------------------------

def _rows(db: sqlite3.Connection, sql: str, args=()) -> list[dict]:
    cur = db.execute(sql, args)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def _one(db: sqlite3.Connection, sql: str, args=()) -> Optional[dict]:
    rows = _rows(db, sql, args)
    return rows[0] if rows else None


def _ctx(db: sqlite3.Connection, key: str) -> str:
    row = _one(db, "SELECT value FROM itsm_context WHERE key = ?", (key,))
    if row is None:
        raise RuntimeError(f"itsm_context has no '{key}' row")
    return row["value"]


def _now(db) -> str:
    return _ctx(db, "now")


def _plus_minutes(ts: str, minutes: int) -> str:
    t = datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ") + timedelta(minutes=minutes)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _check_time(value: str, field: str) -> str:
    try:
        datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        raise ValueError(f"{field} must look like 2026-03-20T18:00:00Z, got {value!r}") from None
    return value


def _actor(db) -> dict:
    uid = _ctx(db, "current_user")
    user = _one(db, "SELECT * FROM users WHERE id = ?", (uid,))
    if user is None or not user["active"]:
        raise PermissionError(f"the acting user {uid} is not an active user")
    return user


def _staff(db) -> dict:
    user = _actor(db)
    if user["role"] not in STAFF_ROLES:
        raise PermissionError(f"{user['name']} is a requester; only IT staff (agent, manager, admin) may do this")
    return user


def _member(db, user_id: str, group_id: Optional[str]) -> bool:
    return group_id is not None and _one(db, "SELECT 1 AS x FROM group_members WHERE group_id = ? AND user_id = ?",
                                         (group_id, user_id)) is not None


def _record(db, number: str) -> tuple[str, dict]:
    prefix = "KB" if number.startswith("KB") else number[:3]
    if prefix not in TABLES:
        raise ValueError(f"{number!r} is not an incident (INC), problem (PRB), change (CHG) or article (KB) number")
    table, key = TABLES[prefix]
    row = _one(db, f"SELECT * FROM {table} WHERE {key} = ?", (number,))
    if row is None:
        raise ValueError(f"no record {number}")
    return table, row


def _get(db, table: str, number: str, what: str) -> dict:
    key = "id" if table in ("users", "groups", "config_items") else "number"
    row = _one(db, f"SELECT * FROM {table} WHERE {key} = ?", (number,))
    if row is None:
        raise ValueError(f"no {what} {number}")
    return row


def _open(row: dict, what: str) -> None:
    if row["state"] in FINAL:
        raise ValueError(f"{what} is {row['state']}: {row['state']} records cannot be changed")


def _group(db, group_id: str) -> dict:
    g = _one(db, "SELECT * FROM groups WHERE id = ?", (group_id,))
    if g is None or not g["active"]:
        raise ValueError(f"no active group {group_id}")
    return g


def _assignee(db, user_id: str, group_id: str) -> dict:
    u = _one(db, "SELECT * FROM users WHERE id = ?", (user_id,))
    if u is None or not u["active"]:
        raise ValueError(f"{user_id} is not an active user")
    if u["role"] not in STAFF_ROLES:
        raise ValueError(f"{u['name']} is a requester and cannot be assigned work")
    if not _member(db, user_id, group_id):
        raise ValueError(f"{u['name']} ({user_id}) is not a member of group {group_id}")
    return u


def _nonempty(value: Optional[str], field: str, minimum: int = 1) -> str:
    if value is None or len(value.strip()) < minimum:
        raise ValueError(f"{field} is required" + (f" (at least {minimum} characters)" if minimum > 1 else ""))
    return value.strip()


@contextmanager
def _tx(db):
    """One tool call = one transaction: all of its writes or none."""
    if not db.in_transaction:
        db.execute("PRAGMA foreign_keys = ON")
    try:
        yield
        db.commit()
    except BaseException:
        db.rollback()
        raise


def _audit(db, actor: str, record: str, action: str, field: str = "", old=None, new=None) -> None:
    db.execute("INSERT INTO audit_log (at, actor_id, record, action, field, old_value, new_value) VALUES (?, ?, ?, ?, ?, ?, ?)",
               (_now(db), actor, record, action, field, None if old is None else str(old), None if new is None else str(new)))


def _update(db, table: str, key: str, row: dict, changes: dict, actor: str, action: str) -> dict:
    """Write the fields that differ, stamp updated_at, and audit each one."""
    changed = {k: v for k, v in changes.items() if row.get(k) != v}
    if changed:
        stamp = {"updated_at": _now(db)} if "updated_at" in row else {}
        sets = ", ".join(f"{k} = ?" for k in [*changed, *stamp])
        db.execute(f"UPDATE {table} SET {sets} WHERE {key} = ?", (*changed.values(), *stamp.values(), row[key]))
        for k, v in changed.items():
            _audit(db, actor, row[key], action, k, row.get(k), v)
    return {**row, **changed}


def _next(db, table: str, key: str, prefix: str, width: int, floor: int) -> str:
    row = _one(db, f"SELECT MAX(CAST(substr({key}, {len(prefix) + 1}) AS INTEGER)) AS n FROM {table}")
    return f"{prefix}{max((row['n'] or 0) + 1, floor):0{width}d}"


def _note(db, record: str, author: str, body: str, kind: str = "work_note") -> None:
    db.execute("INSERT INTO work_notes (record, author_id, kind, body, created_at) VALUES (?, ?, ?, ?, ?)",
               (record, author, kind, body, _now(db)))


def _like(q: str) -> str:
    return f"%{q.strip().lower()}%"


def _freeze(db, start: str, end: str) -> Optional[dict]:
    return _one(db, "SELECT * FROM change_freezes WHERE starts_at < ? AND ends_at > ? ORDER BY starts_at", (end, start))


# -- people and groups --------------------------------------------------------------------------------

def get_current_user(db: sqlite3.Connection) -> dict:
    """Who you are acting as: your user record, role and the groups you belong to."""
    user = _actor(db)
    groups = _rows(db, "SELECT g.id, g.name FROM groups g JOIN group_members m ON m.group_id = g.id WHERE m.user_id = ? ORDER BY g.id",
                   (user["id"],))
    return {**user, "groups": groups, "now": _now(db)}


def search_users(db: sqlite3.Connection, query: str = "", department: Optional[str] = None,
                 role: Optional[Literal["admin", "manager", "agent", "requester"]] = None, limit: int = 20) -> list[dict]:
    """Find users by name, email or id, optionally filtered by department or role.

    Args:
        query: words to look for (empty matches everything)
        limit: the most results to return (1-100)
    """
    sql = "SELECT id, name, email, department, title, role, location, active FROM users WHERE (lower(name) LIKE ? OR lower(email) LIKE ? OR lower(id) LIKE ?)"
    args: list = [_like(query)] * 3
    if department:
        sql, args = sql + " AND department = ?", args + [department]
    if role:
        sql, args = sql + " AND role = ?", args + [role]
    return _rows(db, sql + " ORDER BY name LIMIT ?", (*args, max(1, min(limit, 100))))


def get_user(db: sqlite3.Connection, user_id: str) -> dict:
    """A user's full record, their manager and their groups.

    Args:
        user_id: a user id such as USR0042 (search_users finds it)
    """
    user = _get(db, "users", user_id, "user")
    user["groups"] = _rows(db, "SELECT g.id, g.name FROM groups g JOIN group_members m ON m.group_id = g.id WHERE m.user_id = ? ORDER BY g.id",
                           (user_id,))
    return user


def search_groups(db: sqlite3.Connection, query: str = "") -> list[dict]:
    """List assignment groups whose name or description matches the query (all groups when empty).

    Args:
        query: words to look for (empty matches everything)
    """
    return _rows(db, "SELECT id, name, description, email, manager_id, active FROM groups WHERE lower(name) LIKE ? OR lower(description) LIKE ? ORDER BY id",
                 (_like(query), _like(query)))


def get_group(db: sqlite3.Connection, group_id: str) -> dict:
    """A group with its manager and members (id, name, role, active).

    Args:
        group_id: a group id such as GRP003 (search_groups lists them)
    """
    g = _get(db, "groups", group_id, "group")
    g["members"] = _rows(db, "SELECT u.id, u.name, u.title, u.role, u.active FROM users u JOIN group_members m ON m.user_id = u.id WHERE m.group_id = ? ORDER BY u.id",
                         (group_id,))
    return g


# -- incidents -------------------------------------------------------------------------------------------

def _visible_incident(db, number: str) -> dict:
    inc = _get(db, "incidents", number, "incident")
    me = _actor(db)
    if me["role"] == "requester" and me["id"] not in (inc["caller_id"], inc["opened_by"]):
        raise PermissionError(f"{number} is not one of your incidents")
    return inc


def search_incidents(db: sqlite3.Connection, query: str = "",
                     state: Optional[Literal["new", "in_progress", "on_hold", "resolved", "closed", "canceled"]] = None,
                     priority: Optional[int] = None, assignment_group_id: Optional[str] = None,
                     assigned_to: Optional[str] = None, caller_id: Optional[str] = None, ci_id: Optional[str] = None,
                     limit: int = 20) -> list[dict]:
    """Search incidents by text (number, short description, description) and filters; newest first.

    Args:
        query: words to look for (empty matches everything)
        priority: 1 (critical) to 5 (planning)
        assignment_group_id: group id such as GRP003 (search_groups lists them)
        assigned_to: user id of an active IT staff member of the assignment group
        caller_id: user id of the person affected (search_users finds it)
        ci_id: configuration item id such as CI00042 (search_config_items finds it)
        limit: the most results to return (1-100)
    """
    sql = ("SELECT number, short_description, state, priority, caller_id, assignment_group_id, assigned_to, ci_id, opened_at "
           "FROM incidents WHERE (lower(number) LIKE ? OR lower(short_description) LIKE ? OR lower(description) LIKE ?)")
    args: list = [_like(query)] * 3
    for col, val in (("state", state), ("priority", priority), ("assignment_group_id", assignment_group_id),
                     ("assigned_to", assigned_to), ("caller_id", caller_id), ("ci_id", ci_id)):
        if val is not None:
            sql, args = sql + f" AND {col} = ?", args + [val]
    me = _actor(db)
    if me["role"] == "requester":
        sql, args = sql + " AND (caller_id = ? OR opened_by = ?)", args + [me["id"], me["id"]]
    return _rows(db, sql + " ORDER BY opened_at DESC LIMIT ?", (*args, max(1, min(limit, 100))))


def get_incident(db: sqlite3.Connection, number: str) -> dict:
    """An incident with its work notes and comments (requesters see only comments on their own incidents).

    Args:
        number: incident number such as INC0010042
    """
    inc = _visible_incident(db, number)
    kinds = ("comment",) if _actor(db)["role"] == "requester" else ("comment", "work_note")
    inc["notes"] = _rows(db, f"SELECT author_id, kind, body, created_at FROM work_notes WHERE record = ? AND kind IN ({','.join('?' * len(kinds))}) ORDER BY id",
                         (number, *kinds))
    inc["links"] = _rows(db, "SELECT source, target, relation FROM record_links WHERE source = ? OR target = ? ORDER BY id", (number, number))
    return inc


def create_incident(db: sqlite3.Connection, short_description: str, caller_id: str, impact: Impact, urgency: Impact,
                    category: Category, description: str = "", ci_id: Optional[str] = None,
                    assignment_group_id: Optional[str] = None, assigned_to: Optional[str] = None) -> dict:
    """Log a new incident for a caller. Priority and the SLA follow from impact x urgency; the state starts as new.
    Requesters may only log incidents for themselves and cannot assign them.

    Args:
        caller_id: user id of the person affected (search_users finds it)
        ci_id: configuration item id such as CI00042 (search_config_items finds it)
        assignment_group_id: group id such as GRP003 (search_groups lists them)
        assigned_to: user id of an active IT staff member of the assignment group
    """
    me = _actor(db)
    caller = _one(db, "SELECT * FROM users WHERE id = ?", (caller_id,))
    if caller is None or not caller["active"]:
        raise ValueError(f"caller {caller_id} is not an active user")
    if me["role"] == "requester" and (caller_id != me["id"] or assignment_group_id or assigned_to):
        raise PermissionError("requesters may only log incidents for themselves, without assignment")
    if impact not in ("high", "medium", "low") or urgency not in ("high", "medium", "low"):
        raise ValueError("impact and urgency must be high, medium or low")
    if ci_id is not None:
        ci = _get(db, "config_items", ci_id, "configuration item")
        if ci["status"] == "retired":
            raise ValueError(f"{ci_id} is retired; incidents cannot be logged against retired CIs")
    if assignment_group_id:
        _group(db, assignment_group_id)
    if assigned_to:
        if not assignment_group_id:
            raise ValueError("assigned_to needs an assignment_group_id")
        _assignee(db, assigned_to, assignment_group_id)
    priority = PRIORITY[(impact, urgency)]
    sla = _one(db, "SELECT * FROM slas WHERE priority = ?", (priority,))
    now = _now(db)
    with _tx(db):
        number = _next(db, "incidents", "number", "INC", 7, 10001)
        db.execute("""INSERT INTO incidents (number, short_description, description, category, caller_id, opened_by, ci_id, impact,
                      urgency, priority, state, assignment_group_id, assigned_to, sla_id, resolve_by, opened_at, updated_at)
                      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'new', ?, ?, ?, ?, ?, ?)""",
                   (number, _nonempty(short_description, "short_description"), description, category, caller_id, me["id"], ci_id,
                    impact, urgency, priority, assignment_group_id, assigned_to, sla["id"],
                    _plus_minutes(now, sla["resolution_minutes"]), now, now))
        _audit(db, me["id"], number, "create")
    return get_incident(db, number)


def update_incident(db: sqlite3.Connection, number: str, short_description: Optional[str] = None,
                    description: Optional[str] = None, category: Optional[Category] = None,
                    impact: Optional[Impact] = None, urgency: Optional[Impact] = None, ci_id: Optional[str] = None) -> dict:
    """Change an open incident's details. A new impact or urgency recomputes the priority, SLA and resolve-by time.

    Args:
        number: incident number such as INC0010042
        ci_id: configuration item id such as CI00042 (search_config_items finds it)
    """
    me = _staff(db)
    inc = _get(db, "incidents", number, "incident")
    _open(inc, number)
    changes = {k: v for k, v in dict(short_description=short_description, description=description, category=category,
                                     impact=impact, urgency=urgency, ci_id=ci_id).items() if v is not None}
    if ci_id is not None and _get(db, "config_items", ci_id, "configuration item")["status"] == "retired":
        raise ValueError(f"{ci_id} is retired")
    pri = PRIORITY[(changes.get("impact", inc["impact"]), changes.get("urgency", inc["urgency"]))]
    if pri != inc["priority"]:
        sla = _one(db, "SELECT * FROM slas WHERE priority = ?", (pri,))
        changes.update(priority=pri, sla_id=sla["id"], resolve_by=_plus_minutes(inc["opened_at"], sla["resolution_minutes"]))
    with _tx(db):
        _update(db, "incidents", "number", inc, changes, me["id"], "update")
    return get_incident(db, number)


def assign_incident(db: sqlite3.Connection, number: str, assignment_group_id: str, assigned_to: Optional[str] = None) -> dict:
    """Assign an open incident to a group and optionally to one of the group's active agents (assigned_to is cleared otherwise).

    Args:
        number: incident number such as INC0010042
        assignment_group_id: group id such as GRP003 (search_groups lists them)
        assigned_to: user id of an active IT staff member of the assignment group
    """
    me = _staff(db)
    inc = _get(db, "incidents", number, "incident")
    _open(inc, number)
    if inc["state"] == "resolved":
        raise ValueError(f"{number} is resolved; reopen it before reassigning")
    _group(db, assignment_group_id)
    if assigned_to:
        _assignee(db, assigned_to, assignment_group_id)
    with _tx(db):
        _update(db, "incidents", "number", inc, {"assignment_group_id": assignment_group_id, "assigned_to": assigned_to or None},
                me["id"], "assign")
    return get_incident(db, number)


def set_incident_state(db: sqlite3.Connection, number: str, state: Literal["in_progress", "on_hold", "canceled"],
                       on_hold_reason: Optional[Literal["awaiting_caller", "awaiting_vendor", "awaiting_change", "awaiting_problem"]] = None) -> dict:
    """Move an incident between new, in_progress, on_hold and canceled (use resolve_incident to resolve).
    in_progress needs an assignee; on_hold needs an on_hold_reason.

    Args:
        number: incident number such as INC0010042
    """
    me = _staff(db)
    inc = _get(db, "incidents", number, "incident")
    _open(inc, number)
    if state not in INCIDENT_MOVES.get(inc["state"], set()):
        raise ValueError(f"{number} cannot move from {inc['state']} to {state}")
    if state == "in_progress" and not inc["assigned_to"]:
        raise ValueError(f"{number} has no assignee; assign it before starting work")
    if state == "on_hold" and not on_hold_reason:
        raise ValueError("on_hold_reason is required to put an incident on hold")
    with _tx(db):
        _update(db, "incidents", "number", inc, {"state": state, "on_hold_reason": on_hold_reason if state == "on_hold" else None},
                me["id"], "state")
    return get_incident(db, number)


def resolve_incident(db: sqlite3.Connection, number: str,
                     resolution_code: Literal["fixed", "workaround", "user_error", "duplicate", "no_fault_found", "known_error"],
                     resolution_notes: str) -> dict:
    """Resolve an incident. Only a member of its assignment group may resolve, and resolution notes are mandatory.

    Args:
        number: incident number such as INC0010042
        resolution_notes: what was done (at least 10 characters)
    """
    me = _staff(db)
    inc = _get(db, "incidents", number, "incident")
    _open(inc, number)
    if inc["state"] == "resolved":
        raise ValueError(f"{number} is already resolved")
    if not _member(db, me["id"], inc["assignment_group_id"]):
        raise PermissionError(f"only members of the assignment group ({inc['assignment_group_id']}) may resolve {number}")
    notes = _nonempty(resolution_notes, "resolution_notes", 10)
    with _tx(db):
        _update(db, "incidents", "number", inc, {"state": "resolved", "resolution_code": resolution_code, "resolution_notes": notes,
                                                 "on_hold_reason": None, "resolved_at": _now(db),
                                                 "assigned_to": inc["assigned_to"] or me["id"]}, me["id"], "resolve")
    return get_incident(db, number)


def close_incident(db: sqlite3.Connection, number: str) -> dict:
    """Close a resolved incident. Closed incidents are immutable. The caller or an assignment-group member may close.

    Args:
        number: incident number such as INC0010042
    """
    me = _actor(db)
    inc = _get(db, "incidents", number, "incident")
    if inc["state"] != "resolved":
        raise ValueError(f"{number} is {inc['state']}; only resolved incidents can be closed")
    if me["id"] != inc["caller_id"] and not _member(db, me["id"], inc["assignment_group_id"]):
        raise PermissionError(f"only the caller or the assignment group may close {number}")
    with _tx(db):
        _update(db, "incidents", "number", inc, {"state": "closed", "closed_at": _now(db)}, me["id"], "close")
    return get_incident(db, number)


def reopen_incident(db: sqlite3.Connection, number: str, reason: str) -> dict:
    """Reopen a resolved (not closed) incident: back to in_progress, resolution cleared, the reason logged as a comment.

    Args:
        number: incident number such as INC0010042
    """
    me = _actor(db)
    inc = _visible_incident(db, number)
    if inc["state"] != "resolved":
        raise ValueError(f"{number} is {inc['state']}; only resolved incidents can be reopened")
    why = _nonempty(reason, "reason")
    with _tx(db):
        _update(db, "incidents", "number", inc, {"state": "in_progress", "resolution_code": None, "resolution_notes": "",
                                                 "resolved_at": None, "reopen_count": inc["reopen_count"] + 1}, me["id"], "reopen")
        _note(db, number, me["id"], f"Reopened: {why}", "comment")
    return get_incident(db, number)


def link_incident_to_problem(db: sqlite3.Connection, number: str, problem_number: str) -> dict:
    """Record that an open incident is caused by a problem (sets the incident's problem).

    Args:
        number: incident number such as INC0010042
        problem_number: problem number such as PRB0001042
    """
    me = _staff(db)
    inc = _get(db, "incidents", number, "incident")
    _open(inc, number)
    prb = _get(db, "problems", problem_number, "problem")
    _open(prb, problem_number)
    with _tx(db):
        _update(db, "incidents", "number", inc, {"problem_id": problem_number}, me["id"], "link")
    return get_incident(db, number)


def get_incident_sla(db: sqlite3.Connection, number: str) -> dict:
    """The SLA of an incident: target times, resolve-by, minutes left (negative when late) and whether it is breached.

    Args:
        number: incident number such as INC0010042
    """
    inc = _visible_incident(db, number)
    sla = _one(db, "SELECT * FROM slas WHERE id = ?", (inc["sla_id"],))
    end = inc["resolved_at"] or _now(db)
    late = (datetime.strptime(inc["resolve_by"], "%Y-%m-%dT%H:%M:%SZ") - datetime.strptime(end, "%Y-%m-%dT%H:%M:%SZ"))
    return {"number": number, "priority": inc["priority"], "sla": sla, "resolve_by": inc["resolve_by"],
            "minutes_left": int(late.total_seconds() // 60), "breached": end > inc["resolve_by"]}


# -- notes and links --------------------------------------------------------------------------------------

def add_work_note(db: sqlite3.Connection, record: str, body: str, kind: Literal["work_note", "comment"] = "work_note") -> dict:
    """Add an internal work note or a caller-visible comment to an incident, problem or change that is not closed.
    Requesters may only comment on their own incidents.

    Args:
        record: an incident, problem or change number (INC..., PRB..., CHG...)
        body: the text
    """
    me = _actor(db)
    table, row = _record(db, record)
    if table == "kb_articles":
        raise ValueError("notes go on incidents, problems and changes, not on articles")
    _open(row, record)
    if me["role"] == "requester":
        if table != "incidents" or kind != "comment" or me["id"] not in (row["caller_id"], row["opened_by"]):
            raise PermissionError("requesters may only add comments to their own incidents")
    text = _nonempty(body, "body")
    with _tx(db):
        _note(db, record, me["id"], text, kind)
        _audit(db, me["id"], record, "note", kind, None, text)
    return {"record": record, "kind": kind, "body": text, "author_id": me["id"], "created_at": _now(db)}


def link_records(db: sqlite3.Connection, source: str, target: str,
                 relation: Literal["caused_by", "fixed_by", "related_to", "duplicate_of", "documented_in"]) -> dict:
    """Link two records (INC/PRB/CHG/KB numbers), e.g. an incident fixed_by a change or documented_in a KB article.
    The source must not be closed; duplicate_of links two incidents.

    Args:
        source: the record the link starts from (INC..., PRB..., CHG... or KB... number)
        target: the record it points to (INC..., PRB..., CHG... or KB... number)
    """
    me = _staff(db)
    stable, srow = _record(db, source)
    ttable, _trow = _record(db, target)
    _open(srow, source)
    if source == target:
        raise ValueError("a record cannot link to itself")
    if relation == "duplicate_of" and not (stable == ttable == "incidents"):
        raise ValueError("duplicate_of links an incident to another incident")
    if _one(db, "SELECT 1 AS x FROM record_links WHERE source = ? AND target = ? AND relation = ?", (source, target, relation)):
        raise ValueError(f"{source} is already linked to {target} as {relation}")
    with _tx(db):
        db.execute("INSERT INTO record_links (source, target, relation, created_by, created_at) VALUES (?, ?, ?, ?, ?)",
                   (source, target, relation, me["id"], _now(db)))
        _audit(db, me["id"], source, "link", relation, None, target)
    return {"source": source, "target": target, "relation": relation}


def get_audit_trail(db: sqlite3.Connection, record: str) -> list[dict]:
    """The audit log of one record: who changed which field from what to what, and when.

    Args:
        record: an incident, problem or change number (INC..., PRB..., CHG...)
    """
    _staff(db)
    _record(db, record)
    return _rows(db, "SELECT at, actor_id, action, field, old_value, new_value FROM audit_log WHERE record = ? ORDER BY id", (record,))


# -- problems ----------------------------------------------------------------------------------------------

def search_problems(db: sqlite3.Connection, query: str = "",
                    state: Optional[Literal["new", "root_cause_analysis", "fix_in_progress", "resolved", "closed"]] = None,
                    ci_id: Optional[str] = None, known_error: Optional[bool] = None, limit: int = 20) -> list[dict]:
    """Search problems by text and filters; newest first.

    Args:
        query: words to look for (empty matches everything)
        ci_id: configuration item id such as CI00042 (search_config_items finds it)
        limit: the most results to return (1-100)
    """
    _staff(db)
    sql = ("SELECT number, short_description, state, priority, ci_id, assignment_group_id, assigned_to, known_error, opened_at "
           "FROM problems WHERE (lower(number) LIKE ? OR lower(short_description) LIKE ? OR lower(description) LIKE ?)")
    args: list = [_like(query)] * 3
    for col, val in (("state", state), ("ci_id", ci_id), ("known_error", None if known_error is None else int(known_error))):
        if val is not None:
            sql, args = sql + f" AND {col} = ?", args + [val]
    return _rows(db, sql + " ORDER BY opened_at DESC LIMIT ?", (*args, max(1, min(limit, 100))))


def get_problem(db: sqlite3.Connection, number: str) -> dict:
    """A problem with its linked incidents, notes and links.

    Args:
        number: problem number such as PRB0001042
    """
    _staff(db)
    prb = _get(db, "problems", number, "problem")
    prb["incidents"] = _rows(db, "SELECT number, short_description, state FROM incidents WHERE problem_id = ? ORDER BY number", (number,))
    prb["notes"] = _rows(db, "SELECT author_id, kind, body, created_at FROM work_notes WHERE record = ? ORDER BY id", (number,))
    prb["links"] = _rows(db, "SELECT source, target, relation FROM record_links WHERE source = ? OR target = ? ORDER BY id", (number, number))
    return prb


def create_problem(db: sqlite3.Connection, short_description: str, assignment_group_id: str, priority: int,
                   description: str = "", ci_id: Optional[str] = None, assigned_to: Optional[str] = None) -> dict:
    """Open a problem record (state new) for a recurring or underlying cause. Priority is 1 (critical) to 5 (planning).

    Args:
        assignment_group_id: group id such as GRP003 (search_groups lists them)
        priority: 1 (critical) to 5 (planning)
        ci_id: configuration item id such as CI00042 (search_config_items finds it)
        assigned_to: user id of an active IT staff member of the assignment group
    """
    me = _staff(db)
    if not 1 <= priority <= 5:
        raise ValueError("priority must be 1..5")
    _group(db, assignment_group_id)
    if assigned_to:
        _assignee(db, assigned_to, assignment_group_id)
    if ci_id is not None:
        _get(db, "config_items", ci_id, "configuration item")
    now = _now(db)
    with _tx(db):
        number = _next(db, "problems", "number", "PRB", 7, 1001)
        db.execute("""INSERT INTO problems (number, short_description, description, state, priority, ci_id, assignment_group_id,
                      assigned_to, opened_by, opened_at, updated_at) VALUES (?, ?, ?, 'new', ?, ?, ?, ?, ?, ?, ?)""",
                   (number, _nonempty(short_description, "short_description"), description, priority, ci_id, assignment_group_id,
                    assigned_to, me["id"], now, now))
        _audit(db, me["id"], number, "create")
    return get_problem(db, number)


def assign_problem(db: sqlite3.Connection, number: str, assignment_group_id: str, assigned_to: Optional[str] = None) -> dict:
    """Assign an open problem to a group and optionally one of its active members.

    Args:
        number: problem number such as PRB0001042
        assignment_group_id: group id such as GRP003 (search_groups lists them)
        assigned_to: user id of an active IT staff member of the assignment group
    """
    me = _staff(db)
    prb = _get(db, "problems", number, "problem")
    _open(prb, number)
    _group(db, assignment_group_id)
    if assigned_to:
        _assignee(db, assigned_to, assignment_group_id)
    with _tx(db):
        _update(db, "problems", "number", prb, {"assignment_group_id": assignment_group_id, "assigned_to": assigned_to or None},
                me["id"], "assign")
    return get_problem(db, number)


def set_problem_state(db: sqlite3.Connection, number: str, state: Literal["root_cause_analysis", "fix_in_progress"]) -> dict:
    """Advance a problem: new -> root_cause_analysis -> fix_in_progress (use resolve_problem after that).

    Args:
        number: problem number such as PRB0001042
    """
    me = _staff(db)
    prb = _get(db, "problems", number, "problem")
    _open(prb, number)
    if state not in PROBLEM_MOVES.get(prb["state"], set()):
        raise ValueError(f"{number} cannot move from {prb['state']} to {state}")
    if not prb["assigned_to"]:
        raise ValueError(f"{number} has no assignee; assign it first")
    with _tx(db):
        _update(db, "problems", "number", prb, {"state": state}, me["id"], "state")
    return get_problem(db, number)


def mark_known_error(db: sqlite3.Connection, number: str, workaround: str) -> dict:
    """Flag an open problem as a known error with a documented workaround."""
    me = _staff(db)
    prb = _get(db, "problems", number, "problem")
    _open(prb, number)
    text = _nonempty(workaround, "workaround", 10)
    with _tx(db):
        _update(db, "problems", "number", prb, {"known_error": 1, "workaround": text}, me["id"], "known_error")
    return get_problem(db, number)


def resolve_problem(db: sqlite3.Connection, number: str, root_cause: str, resolution_notes: str) -> dict:
    """Resolve a problem in fix_in_progress. Needs the root cause and resolution notes; only its assignment group may resolve.

    Args:
        number: problem number such as PRB0001042
        resolution_notes: what was done (at least 10 characters)
    """
    me = _staff(db)
    prb = _get(db, "problems", number, "problem")
    _open(prb, number)
    if prb["state"] != "fix_in_progress":
        raise ValueError(f"{number} is {prb['state']}; a problem is resolved from fix_in_progress")
    if not _member(db, me["id"], prb["assignment_group_id"]):
        raise PermissionError(f"only members of {prb['assignment_group_id']} may resolve {number}")
    changes = {"state": "resolved", "root_cause": _nonempty(root_cause, "root_cause", 10),
               "resolution_notes": _nonempty(resolution_notes, "resolution_notes", 10), "resolved_at": _now(db)}
    with _tx(db):
        _update(db, "problems", "number", prb, changes, me["id"], "resolve")
    return get_problem(db, number)


def close_problem(db: sqlite3.Connection, number: str) -> dict:
    """Close a resolved problem. Every linked incident must be resolved, closed or canceled first.

    Args:
        number: problem number such as PRB0001042
    """
    me = _staff(db)
    prb = _get(db, "problems", number, "problem")
    if prb["state"] != "resolved":
        raise ValueError(f"{number} is {prb['state']}; only resolved problems can be closed")
    still = _rows(db, "SELECT number FROM incidents WHERE problem_id = ? AND state IN ('new', 'in_progress', 'on_hold')", (number,))
    if still:
        raise ValueError(f"{number} still has open incidents: {', '.join(r['number'] for r in still)}")
    with _tx(db):
        _update(db, "problems", "number", prb, {"state": "closed", "closed_at": _now(db)}, me["id"], "close")
    return get_problem(db, number)


# -- changes -----------------------------------------------------------------------------------------------

def search_changes(db: sqlite3.Connection, query: str = "",
                   state: Optional[Literal["new", "assess", "scheduled", "implement", "review", "closed", "canceled"]] = None,
                   ci_id: Optional[str] = None, assignment_group_id: Optional[str] = None, limit: int = 20) -> list[dict]:
    """Search change requests by text and filters; newest first.

    Args:
        query: words to look for (empty matches everything)
        ci_id: configuration item id such as CI00042 (search_config_items finds it)
        assignment_group_id: group id such as GRP003 (search_groups lists them)
        limit: the most results to return (1-100)
    """
    _staff(db)
    sql = ("SELECT number, short_description, type, state, risk, approval, ci_id, assignment_group_id, planned_start, planned_end "
           "FROM change_requests WHERE (lower(number) LIKE ? OR lower(short_description) LIKE ? OR lower(description) LIKE ?)")
    args: list = [_like(query)] * 3
    for col, val in (("state", state), ("ci_id", ci_id), ("assignment_group_id", assignment_group_id)):
        if val is not None:
            sql, args = sql + f" AND {col} = ?", args + [val]
    return _rows(db, sql + " ORDER BY created_at DESC LIMIT ?", (*args, max(1, min(limit, 100))))


def get_change(db: sqlite3.Connection, number: str) -> dict:
    """A change request with its notes and links.

    Args:
        number: change number such as CHG0003042
    """
    _staff(db)
    chg = _get(db, "change_requests", number, "change")
    chg["notes"] = _rows(db, "SELECT author_id, kind, body, created_at FROM work_notes WHERE record = ? ORDER BY id", (number,))
    chg["links"] = _rows(db, "SELECT source, target, relation FROM record_links WHERE source = ? OR target = ? ORDER BY id", (number, number))
    return chg


def list_change_freezes(db: sqlite3.Connection) -> list[dict]:
    """The change freeze windows. Only emergency changes may be planned inside one."""
    return _rows(db, "SELECT * FROM change_freezes ORDER BY starts_at")


def _check_window(db, ctype: str, start: str, end: str) -> None:
    _check_time(start, "planned_start")
    _check_time(end, "planned_end")
    if end <= start:
        raise ValueError("planned_end must be after planned_start")
    if start < _now(db):
        raise ValueError(f"planned_start {start} is in the past (now is {_now(db)})")
    frz = _freeze(db, start, end)
    if frz and ctype != "emergency":
        raise ValueError(f"the window overlaps change freeze {frz['id']} '{frz['name']}' ({frz['starts_at']} to {frz['ends_at']}); only emergency changes are allowed")


def create_change(db: sqlite3.Connection, short_description: str, type: Literal["standard", "normal", "emergency"],
                  risk: Literal["low", "moderate", "high"], assignment_group_id: str, planned_start: str, planned_end: str,
                  implementation_plan: str, backout_plan: str, ci_id: Optional[str] = None, description: str = "",
                  assigned_to: Optional[str] = None) -> dict:
    """Raise a change request (state new). Standard changes are pre-approved; normal and emergency changes need CAB approval.
    Times are UTC like 2026-03-20T18:00:00Z. The window must be in the future and, unless the change is an emergency,
    outside every change freeze. Implementation and backout plans are mandatory.

    Args:
        assignment_group_id: group id such as GRP003 (search_groups lists them)
        planned_start: UTC start like 2026-03-20T18:00:00Z
        planned_end: UTC end like 2026-03-20T20:00:00Z, after planned_start
        ci_id: configuration item id such as CI00042 (search_config_items finds it)
        assigned_to: user id of an active IT staff member of the assignment group
    """
    me = _staff(db)
    _group(db, assignment_group_id)
    if assigned_to:
        _assignee(db, assigned_to, assignment_group_id)
    if ci_id is not None:
        ci = _get(db, "config_items", ci_id, "configuration item")
        if ci["status"] == "retired":
            raise ValueError(f"{ci_id} is retired")
    _check_window(db, type, planned_start, planned_end)
    now = _now(db)
    with _tx(db):
        number = _next(db, "change_requests", "number", "CHG", 7, 3001)
        db.execute("""INSERT INTO change_requests (number, short_description, description, type, state, risk, ci_id, assignment_group_id,
                      assigned_to, requested_by, approval, planned_start, planned_end, implementation_plan, backout_plan, created_at, updated_at)
                      VALUES (?, ?, ?, ?, 'new', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                   (number, _nonempty(short_description, "short_description"), description, type, risk, ci_id, assignment_group_id,
                    assigned_to, me["id"], "not_required" if type == "standard" else "not_requested", planned_start, planned_end,
                    _nonempty(implementation_plan, "implementation_plan", 10), _nonempty(backout_plan, "backout_plan", 10), now, now))
        _audit(db, me["id"], number, "create")
    return get_change(db, number)


def update_change(db: sqlite3.Connection, number: str, short_description: Optional[str] = None, description: Optional[str] = None,
                  risk: Optional[Literal["low", "moderate", "high"]] = None, planned_start: Optional[str] = None,
                  planned_end: Optional[str] = None, implementation_plan: Optional[str] = None,
                  backout_plan: Optional[str] = None, ci_id: Optional[str] = None) -> dict:
    """Edit a change that is still new (not yet submitted or approved). A new window is checked against the freezes.

    Args:
        number: change number such as CHG0003042
        planned_start: UTC start like 2026-03-20T18:00:00Z
        planned_end: UTC end like 2026-03-20T20:00:00Z, after planned_start
        ci_id: configuration item id such as CI00042 (search_config_items finds it)
    """
    me = _staff(db)
    chg = _get(db, "change_requests", number, "change")
    if chg["state"] != "new":
        raise ValueError(f"{number} is {chg['state']}; only new changes can be edited")
    changes = {k: v for k, v in dict(short_description=short_description, description=description, risk=risk,
                                     planned_start=planned_start, planned_end=planned_end, implementation_plan=implementation_plan,
                                     backout_plan=backout_plan, ci_id=ci_id).items() if v is not None}
    if "planned_start" in changes or "planned_end" in changes:
        _check_window(db, chg["type"], changes.get("planned_start", chg["planned_start"]), changes.get("planned_end", chg["planned_end"]))
    if ci_id is not None:
        _get(db, "config_items", ci_id, "configuration item")
    with _tx(db):
        _update(db, "change_requests", "number", chg, changes, me["id"], "update")
    return get_change(db, number)


def submit_change_for_approval(db: sqlite3.Connection, number: str) -> dict:
    """Send a new normal or emergency change to the Change Advisory Board (state assess, approval requested).

    Args:
        number: change number such as CHG0003042
    """
    me = _staff(db)
    chg = _get(db, "change_requests", number, "change")
    if chg["type"] == "standard":
        raise ValueError(f"{number} is a standard change: it is pre-approved, schedule it with set_change_state")
    if chg["state"] != "new":
        raise ValueError(f"{number} is {chg['state']}; only new changes can be submitted")
    _check_window(db, chg["type"], chg["planned_start"], chg["planned_end"])
    with _tx(db):
        _update(db, "change_requests", "number", chg, {"state": "assess", "approval": "requested", "approved_by": None}, me["id"], "submit")
    return get_change(db, number)


def decide_change_approval(db: sqlite3.Connection, number: str, decision: Literal["approved", "rejected"], comment: str) -> dict:
    """Approve or reject a change awaiting CAB approval. Only a manager or admin on the Change Advisory Board may decide,
    never on a change they requested. Approval schedules the change; rejection sends it back to new.

    Args:
        number: change number such as CHG0003042
    """
    me = _staff(db)
    chg = _get(db, "change_requests", number, "change")
    if chg["state"] != "assess" or chg["approval"] != "requested":
        raise ValueError(f"{number} is not awaiting approval (state {chg['state']}, approval {chg['approval']})")
    if me["role"] not in ("manager", "admin") or not _member(db, me["id"], CAB_GROUP):
        raise PermissionError("only managers or admins on the Change Advisory Board may approve or reject changes")
    if me["id"] == chg["requested_by"]:
        raise PermissionError("you requested this change; someone else on the CAB must decide it")
    text = _nonempty(comment, "comment")
    with _tx(db):
        _update(db, "change_requests", "number", chg, {"state": "scheduled" if decision == "approved" else "new", "approval": decision,
                                                       "approved_by": me["id"]}, me["id"], "approval")
        _note(db, number, me["id"], f"CAB {decision}: {text}")
    return get_change(db, number)


def set_change_state(db: sqlite3.Connection, number: str, state: Literal["scheduled", "implement", "review", "canceled"]) -> dict:
    """Move a change: new -> scheduled (standard changes only), scheduled -> implement -> review, or cancel one not yet implementing.
    Only members of the change's assignment group may start or review the implementation.

    Args:
        number: change number such as CHG0003042
    """
    me = _staff(db)
    chg = _get(db, "change_requests", number, "change")
    _open(chg, number)
    cur = chg["state"]
    ok = {("new", "scheduled"): chg["type"] == "standard", ("scheduled", "implement"): True, ("implement", "review"): True,
          ("new", "canceled"): True, ("assess", "canceled"): True, ("scheduled", "canceled"): True}.get((cur, state), False)
    if not ok:
        raise ValueError(f"{number} ({chg['type']}) cannot move from {cur} to {state}")
    if state in ("implement", "review") and not _member(db, me["id"], chg["assignment_group_id"]):
        raise PermissionError(f"only members of {chg['assignment_group_id']} may implement {number}")
    if state == "scheduled":
        _check_window(db, chg["type"], chg["planned_start"], chg["planned_end"])
    with _tx(db):
        _update(db, "change_requests", "number", chg, {"state": state}, me["id"], "state")
    return get_change(db, number)


def close_change(db: sqlite3.Connection, number: str, close_code: Literal["successful", "successful_with_issues", "unsuccessful"],
                 close_notes: str) -> dict:
    """Close a change in review with a close code and notes. Only its assignment group may close it.

    Args:
        number: change number such as CHG0003042
    """
    me = _staff(db)
    chg = _get(db, "change_requests", number, "change")
    if chg["state"] != "review":
        raise ValueError(f"{number} is {chg['state']}; only changes in review can be closed")
    if not _member(db, me["id"], chg["assignment_group_id"]):
        raise PermissionError(f"only members of {chg['assignment_group_id']} may close {number}")
    with _tx(db):
        _update(db, "change_requests", "number", chg, {"state": "closed", "close_code": close_code,
                                                       "close_notes": _nonempty(close_notes, "close_notes", 10)}, me["id"], "close")
    return get_change(db, number)


# -- configuration items -------------------------------------------------------------------------------------

def search_config_items(db: sqlite3.Connection, query: str = "",
                        ci_class: Optional[Literal["business_service", "application", "server", "database", "network_device", "storage", "workstation"]] = None,
                        status: Optional[Literal["operational", "degraded", "down", "maintenance", "retired"]] = None,
                        environment: Optional[Literal["production", "staging", "development"]] = None, limit: int = 20) -> list[dict]:
    """Search the CMDB by name, id or IP address and filters.

    Args:
        query: words to look for (empty matches everything)
        limit: the most results to return (1-100)
    """
    _staff(db)
    sql = ("SELECT id, name, ci_class, environment, status, criticality, owner_group_id, location, ip_address FROM config_items "
           "WHERE (lower(name) LIKE ? OR lower(id) LIKE ? OR ifnull(ip_address, '') LIKE ?)")
    args: list = [_like(query)] * 3
    for col, val in (("ci_class", ci_class), ("status", status), ("environment", environment)):
        if val is not None:
            sql, args = sql + f" AND {col} = ?", args + [val]
    return _rows(db, sql + " ORDER BY name LIMIT ?", (*args, max(1, min(limit, 100))))


def get_config_item(db: sqlite3.Connection, ci_id: str) -> dict:
    """A configuration item with what it depends on, what depends on it, and its open incidents.

    Args:
        ci_id: configuration item id such as CI00042 (search_config_items finds it)
    """
    _staff(db)
    ci = _get(db, "config_items", ci_id, "configuration item")
    ci["depends_on"] = _rows(db, "SELECT c.id, c.name, c.ci_class, c.status, r.relation FROM ci_relationships r JOIN config_items c ON c.id = r.child_id WHERE r.parent_id = ? ORDER BY c.id", (ci_id,))
    ci["used_by"] = _rows(db, "SELECT c.id, c.name, c.ci_class, c.status, r.relation FROM ci_relationships r JOIN config_items c ON c.id = r.parent_id WHERE r.child_id = ? ORDER BY c.id", (ci_id,))
    ci["open_incidents"] = _rows(db, "SELECT number, short_description, state, priority FROM incidents WHERE ci_id = ? AND state IN ('new', 'in_progress', 'on_hold') ORDER BY number", (ci_id,))
    return ci


def update_config_item_status(db: sqlite3.Connection, ci_id: str, status: Literal["operational", "degraded", "down", "maintenance", "retired"]) -> dict:
    """Set a CI's operational status. Only its owner group (or an admin) may; retired CIs are immutable, and a CI
    with open incidents cannot be retired.

    Args:
        ci_id: configuration item id such as CI00042 (search_config_items finds it)
    """
    me = _staff(db)
    ci = _get(db, "config_items", ci_id, "configuration item")
    if ci["status"] == "retired":
        raise ValueError(f"{ci_id} is retired; retired CIs cannot be changed")
    if me["role"] != "admin" and not _member(db, me["id"], ci["owner_group_id"]):
        raise PermissionError(f"only the owner group {ci['owner_group_id']} may change {ci_id}")
    if status == "retired" and _one(db, "SELECT 1 AS x FROM incidents WHERE ci_id = ? AND state IN ('new', 'in_progress', 'on_hold')", (ci_id,)):
        raise ValueError(f"{ci_id} has open incidents; resolve them before retiring it")
    with _tx(db):
        _update(db, "config_items", "id", ci, {"status": status}, me["id"], "status")
    return get_config_item(db, ci_id)


# -- knowledge --------------------------------------------------------------------------------------------------

def search_kb_articles(db: sqlite3.Connection, query: str = "", category: Optional[str] = None,
                       state: Optional[Literal["draft", "review", "published", "retired"]] = "published", limit: int = 20) -> list[dict]:
    """Search knowledge articles by title and body (published ones by default). Requesters see published public articles only.

    Args:
        query: words to look for (empty matches everything)
        limit: the most results to return (1-100)
    """
    me = _actor(db)
    sql = "SELECT number, title, category, state, visibility, author_id, view_count, updated_at FROM kb_articles WHERE (lower(title) LIKE ? OR lower(body) LIKE ?)"
    args: list = [_like(query)] * 2
    if me["role"] == "requester":
        sql += " AND state = 'published' AND visibility = 'public'"
    for col, val in (("category", category), ("state", state)):
        if val is not None:
            sql, args = sql + f" AND {col} = ?", args + [val]
    return _rows(db, sql + " ORDER BY view_count DESC, number LIMIT ?", (*args, max(1, min(limit, 100))))


def get_kb_article(db: sqlite3.Connection, number: str) -> dict:
    """One knowledge article with its full body.

    Args:
        number: article number such as KB0001042
    """
    me = _actor(db)
    kb = _get(db, "kb_articles", number, "article")
    if me["role"] == "requester" and (kb["state"] != "published" or kb["visibility"] != "public"):
        raise PermissionError(f"{number} is not a published public article")
    return kb


def create_kb_article(db: sqlite3.Connection, title: str, body: str, category: str,
                      visibility: Literal["public", "internal"] = "internal", ci_id: Optional[str] = None) -> dict:
    """Write a new knowledge article as a draft authored by you.

    Args:
        body: the text
        ci_id: configuration item id such as CI00042 (search_config_items finds it)
    """
    me = _staff(db)
    if ci_id is not None:
        _get(db, "config_items", ci_id, "configuration item")
    now = _now(db)
    with _tx(db):
        number = _next(db, "kb_articles", "number", "KB", 7, 1001)
        db.execute("""INSERT INTO kb_articles (number, title, body, category, state, visibility, author_id, ci_id, updated_at)
                      VALUES (?, ?, ?, ?, 'draft', ?, ?, ?, ?)""",
                   (number, _nonempty(title, "title"), _nonempty(body, "body", 20), _nonempty(category, "category"), visibility,
                    me["id"], ci_id, now))
        _audit(db, me["id"], number, "create")
    return get_kb_article(db, number)


def submit_kb_article(db: sqlite3.Connection, number: str) -> dict:
    """Send your draft article to review.

    Args:
        number: article number such as KB0001042
    """
    me = _staff(db)
    kb = _get(db, "kb_articles", number, "article")
    if kb["state"] != "draft":
        raise ValueError(f"{number} is {kb['state']}; only drafts can be submitted")
    if kb["author_id"] != me["id"]:
        raise PermissionError(f"only the author ({kb['author_id']}) may submit {number}")
    with _tx(db):
        _update(db, "kb_articles", "number", kb, {"state": "review"}, me["id"], "submit")
    return get_kb_article(db, number)


def publish_kb_article(db: sqlite3.Connection, number: str) -> dict:
    """Publish an article in review. Four-eyes rule: the author may not publish their own article.

    Args:
        number: article number such as KB0001042
    """
    me = _staff(db)
    kb = _get(db, "kb_articles", number, "article")
    if kb["state"] != "review":
        raise ValueError(f"{number} is {kb['state']}; only articles in review can be published")
    if kb["author_id"] == me["id"]:
        raise PermissionError("authors may not publish their own articles; another reviewer must")
    with _tx(db):
        _update(db, "kb_articles", "number", kb, {"state": "published", "published_at": _now(db)}, me["id"], "publish")
    return get_kb_article(db, number)


def retire_kb_article(db: sqlite3.Connection, number: str, reason: str) -> dict:
    """Retire a published article (it stays readable for staff). Its author, a manager or an admin may retire it.

    Args:
        number: article number such as KB0001042
    """
    me = _staff(db)
    kb = _get(db, "kb_articles", number, "article")
    if kb["state"] != "published":
        raise ValueError(f"{number} is {kb['state']}; only published articles can be retired")
    if me["id"] != kb["author_id"] and me["role"] not in ("manager", "admin"):
        raise PermissionError("only the author, a manager or an admin may retire an article")
    why = _nonempty(reason, "reason")
    with _tx(db):
        _update(db, "kb_articles", "number", kb, {"state": "retired"}, me["id"], "retire")
        _audit(db, me["id"], number, "retire_reason", "reason", None, why)
    return get_kb_article(db, number)
