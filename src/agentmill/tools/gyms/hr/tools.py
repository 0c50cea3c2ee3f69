"""hr gym tools: employees, organisation, leave, onboarding and job changes over SQLite.

Every public function whose first parameter is `db` is a tool. This file runs inside the trial's
sandbox with the system python3 and the standard library only. The agent acts as the employee named
by `hr_context.current_user`; the clock is `hr_context.now`, so every write is deterministic.
Tools check the HR policies, raise ValueError/PermissionError with a message the model sees,
commit their writes as one transaction and record every changed field in `hr_audit`.
"""

import sqlite3
from contextlib import contextmanager
from datetime import date, timedelta
from typing import Literal, Optional

LeaveType = Literal["annual", "sick", "compassionate", "unpaid"]
FINAL_LEAVE = {"rejected", "cancelled"}


# -- helpers (private: not tools) ------------------------------------------------------------------

def _rows(db: sqlite3.Connection, sql: str, args=()) -> list[dict]:
    cur = db.execute(sql, args)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def _one(db: sqlite3.Connection, sql: str, args=()) -> Optional[dict]:
    rows = _rows(db, sql, args)
    return rows[0] if rows else None


def _ctx(db, key: str) -> str:
    row = _one(db, "SELECT value FROM hr_context WHERE key = ?", (key,))
    if row is None:
        raise RuntimeError(f"hr_context has no '{key}' row")
    return row["value"]


def _now(db) -> str:
    return _ctx(db, "now")


def _today(db) -> date:
    return date.fromisoformat(_now(db)[:10])


def _date(value: str, field: str) -> date:
    try:
        return date.fromisoformat(value)
    except (TypeError, ValueError):
        raise ValueError(f"{field} must be a date like 2026-04-07, got {value!r}") from None


def _me(db) -> dict:
    eid = _ctx(db, "current_user")
    me = _one(db, "SELECT * FROM employees WHERE id = ?", (eid,))
    if me is None or me["status"] != "active":
        raise PermissionError(f"the acting user {eid} is not an active employee")
    return me


def _hr(db) -> dict:
    me = _me(db)
    if me["role"] != "hr":
        raise PermissionError(f"{me['name']} is not in HR; only HR staff may do this")
    return me


def _employee(db, employee_id: str) -> dict:
    e = _one(db, "SELECT * FROM employees WHERE id = ?", (employee_id,))
    if e is None:
        raise ValueError(f"no employee {employee_id} (see search_employees)")
    return e


def _not_terminated(e: dict) -> None:
    if e["status"] == "terminated":
        raise ValueError(f"{e['name']} ({e['id']}) left on {e['termination_date']}; terminated employees' records are final")


def _may_manage(db, me: dict, e: dict) -> bool:
    """HR manages everyone; a manager manages their direct reports."""
    return me["role"] == "hr" or e["manager_id"] == me["id"]


def _visible(db, employee_id: str) -> dict:
    me = _me(db)
    e = _employee(db, employee_id)
    if e["id"] != me["id"] and not _may_manage(db, me, e):
        raise PermissionError(f"{employee_id} is not you or one of your direct reports; ask HR")
    return e


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
    db.execute("INSERT INTO hr_audit (at, actor_id, record, action, field, old_value, new_value) VALUES (?, ?, ?, ?, ?, ?, ?)",
               (_now(db), actor, record, action, field, None if old is None else str(old), None if new is None else str(new)))


def _update(db, table: str, where: dict, record: str, row: dict, changes: dict, actor: str, action: str) -> dict:
    """Write the fields that differ, stamp updated_at, and audit each one."""
    changed = {k: v for k, v in changes.items() if row.get(k) != v}
    if changed:
        stamp = {"updated_at": _now(db)} if "updated_at" in row else {}
        sets = ", ".join(f"{k} = ?" for k in [*changed, *stamp])
        cond = " AND ".join(f"{k} = ?" for k in where)
        db.execute(f"UPDATE {table} SET {sets} WHERE {cond}", (*changed.values(), *stamp.values(), *where.values()))
        for k, v in changed.items():
            _audit(db, actor, record, action, k, row.get(k), v)
    return {**row, **changed}


def _next(db, table: str, prefix: str, width: int) -> str:
    row = _one(db, f"SELECT MAX(CAST(substr(id, {len(prefix) + 1}) AS INTEGER)) AS n FROM {table}")
    return f"{prefix}{(row['n'] or 0) + 1:0{width}d}"


def _working_days(db, start: date, end: date) -> float:
    hol = {r["day"] for r in _rows(db, "SELECT day FROM public_holidays WHERE day BETWEEN ? AND ?", (start.isoformat(), end.isoformat()))}
    return float(sum(1 for i in range((end - start).days + 1)
                     if (d := start + timedelta(days=i)).weekday() < 5 and d.isoformat() not in hol))


def _balance(db, employee_id: str, leave_type: str, year: int) -> Optional[dict]:
    return _one(db, "SELECT * FROM leave_balances WHERE employee_id = ? AND leave_type = ? AND year = ?", (employee_id, leave_type, year))


def _move_days(db, req: dict, actor: str, action: str, used: float = 0.0, pending: float = 0.0) -> None:
    """Shift a request's days between a capped balance's pending and used columns (uncapped types have none)."""
    year = int(req["start_date"][:4])
    bal = _balance(db, req["employee_id"], req["leave_type"], year)
    if bal is None:
        return
    key = f"{req['employee_id']}/{req['leave_type']}/{year}"
    _update(db, "leave_balances", {"employee_id": bal["employee_id"], "leave_type": bal["leave_type"], "year": year}, key, bal,
            {"used_days": bal["used_days"] + used, "pending_days": bal["pending_days"] + pending}, actor, action)


def _like(q: str) -> str:
    return f"%{q.strip().lower()}%"


# -- people and organisation -----------------------------------------------------------------------

def get_current_employee(db: sqlite3.Connection) -> dict:
    """Who you are acting as: your employee record, role, position, manager, direct reports and today's date."""
    me = _me(db)
    return {**get_employee(db, me["id"]), "today": _today(db).isoformat()}


def search_employees(db: sqlite3.Connection, query: str = "", department_id: Optional[str] = None,
                     status: Optional[Literal["pre_hire", "active", "terminated"]] = None, limit: int = 20) -> list[dict]:
    """Find employees by name, email, id or job title (directory fields only: no salaries).

    Args:
        query: words to look for (empty matches everything)
        department_id: a department id such as DEP04
        limit: the most results to return (1-100)
    """
    _me(db)
    q = _like(query)
    sql = ("SELECT e.id, e.name, e.email, e.department_id, d.name AS department, p.title, e.manager_id, e.role, e.status, e.location "
           "FROM employees e JOIN departments d ON d.id = e.department_id JOIN positions p ON p.id = e.position_id "
           "WHERE (lower(e.name) LIKE ? OR lower(e.email) LIKE ? OR lower(e.id) LIKE ? OR lower(p.title) LIKE ?)")
    args: list = [q, q, q, q]
    if department_id:
        sql, args = sql + " AND e.department_id = ?", args + [department_id]
    if status:
        sql, args = sql + " AND e.status = ?", args + [status]
    return _rows(db, sql + " ORDER BY e.name LIMIT ?", (*args, max(1, min(limit, 100))))


def get_employee(db: sqlite3.Connection, employee_id: str) -> dict:
    """One employee's record. Salary and hire details are shown to HR, the employee and their manager only.

    Args:
        employee_id: employee id such as EMP0042
    """
    me = _me(db)
    e = _employee(db, employee_id)
    pos = _one(db, "SELECT title, grade FROM positions WHERE id = ?", (e["position_id"],))
    reports = _rows(db, "SELECT id, name FROM employees WHERE manager_id = ? AND status != 'terminated' ORDER BY id", (e["id"],))
    out = {**e, "title": pos["title"], "grade": pos["grade"], "direct_reports": reports}
    if e["id"] != me["id"] and not _may_manage(db, me, e):
        for k in ("salary", "hire_date", "termination_date", "created_at", "updated_at"):
            out.pop(k)
    return out


def list_direct_reports(db: sqlite3.Connection, manager_id: Optional[str] = None) -> list[dict]:
    """The current (not terminated) direct reports of a manager (default: you).

    Args:
        manager_id: employee id of the manager such as EMP0045
    """
    me = _me(db)
    mid = manager_id or me["id"]
    _employee(db, mid)
    return _rows(db, """SELECT e.id, e.name, e.email, p.title, e.status, e.location FROM employees e JOIN positions p ON p.id = e.position_id
                        WHERE e.manager_id = ? AND e.status != 'terminated' ORDER BY e.name""", (mid,))


def search_departments(db: sqlite3.Connection, query: str = "") -> list[dict]:
    """Departments with their cost centre, head and number of current employees."""
    _me(db)
    return _rows(db, """SELECT d.id, d.name, d.cost_centre, d.head_id, h.name AS head_name,
                        (SELECT COUNT(*) FROM employees e WHERE e.department_id = d.id AND e.status != 'terminated') AS employees
                        FROM departments d LEFT JOIN employees h ON h.id = d.head_id WHERE lower(d.name) LIKE ? ORDER BY d.id""",
                 (_like(query),))


def search_positions(db: sqlite3.Connection, query: str = "", department_id: Optional[str] = None) -> list[dict]:
    """Positions (job titles per department) with grade, salary band, headcount and how many hold them.

    Args:
        department_id: a department id such as DEP04
    """
    _me(db)
    sql = ("SELECT p.*, (SELECT COUNT(*) FROM employees e WHERE e.position_id = p.id AND e.status != 'terminated') AS filled "
           "FROM positions p WHERE lower(p.title) LIKE ?")
    args: list = [_like(query)]
    if department_id:
        sql, args = sql + " AND p.department_id = ?", args + [department_id]
    return _rows(db, sql + " ORDER BY p.department_id, p.grade, p.title", args)


def update_employee(db: sqlite3.Connection, employee_id: str, location: Optional[str] = None, manager_id: Optional[str] = None) -> dict:
    """HR only: change an employee's work location or line manager (an active employee who is not the employee,
    and not someone who reports to them).

    Args:
        employee_id: employee id such as EMP0042
        location: Rotterdam HQ, Hamburg Depot, Lyon Office, Gdansk Hub or Remote
        manager_id: employee id of the new manager
    """
    me = _hr(db)
    e = _employee(db, employee_id)
    _not_terminated(e)
    changes: dict = {}
    if location is not None:
        if location not in ("Rotterdam HQ", "Hamburg Depot", "Lyon Office", "Gdansk Hub", "Remote"):
            raise ValueError("location must be Rotterdam HQ, Hamburg Depot, Lyon Office, Gdansk Hub or Remote")
        changes["location"] = location
    if manager_id is not None:
        m = _employee(db, manager_id)
        if m["status"] != "active":
            raise ValueError(f"{m['name']} ({manager_id}) is not an active employee")
        chain, cur = set(), m
        while cur is not None and cur["id"] not in chain:
            if cur["id"] == e["id"]:
                raise ValueError(f"{m['name']} reports to {e['name']}; that would make a reporting loop")
            chain.add(cur["id"])
            cur = _one(db, "SELECT * FROM employees WHERE id = ?", (cur["manager_id"],)) if cur["manager_id"] else None
        changes["manager_id"] = manager_id
    if not changes:
        raise ValueError("nothing to change: give location or manager_id")
    with _tx(db):
        _update(db, "employees", {"id": employee_id}, employee_id, e, changes, me["id"], "update")
        if manager_id is not None and _one(db, "SELECT role FROM employees WHERE id = ?", (manager_id,))["role"] == "employee":
            m = _employee(db, manager_id)
            _update(db, "employees", {"id": manager_id}, manager_id, m, {"role": "manager"}, me["id"], "update")
    return get_employee(db, employee_id)


def terminate_employee(db: sqlite3.Connection, employee_id: str, termination_date: str, reason: str) -> dict:
    """HR only: record that an employee leaves on termination_date (today or later). Their direct reports must be moved
    to another manager first; their pending leave is cancelled. Nobody terminates themselves.

    Args:
        employee_id: employee id such as EMP0042
        termination_date: last day of employment like 2026-03-31
        reason: why they leave (resignation, end of contract, ...)
    """
    me = _hr(db)
    e = _employee(db, employee_id)
    _not_terminated(e)
    if e["id"] == me["id"]:
        raise PermissionError("you cannot terminate your own employment; another HR colleague must do it")
    day = _date(termination_date, "termination_date")
    if day < _today(db):
        raise ValueError(f"termination_date {termination_date} is in the past (today is {_today(db)})")
    text = _nonempty(reason, "reason", 5)
    reports = _rows(db, "SELECT id FROM employees WHERE manager_id = ? AND status != 'terminated'", (employee_id,))
    if reports:
        raise ValueError(f"{e['name']} still manages {', '.join(r['id'] for r in reports)}; move them to another manager first")
    with _tx(db):
        for req in _rows(db, "SELECT * FROM leave_requests WHERE employee_id = ? AND status = 'pending'", (employee_id,)):
            _update(db, "leave_requests", {"id": req["id"]}, req["id"], req, {"status": "cancelled"}, me["id"], "cancel")
            _move_days(db, req, me["id"], "cancel", pending=-req["days"])
        _update(db, "employees", {"id": employee_id}, employee_id, e, {"status": "terminated", "termination_date": day.isoformat()},
                me["id"], "terminate")
        _audit(db, me["id"], employee_id, "terminate", "reason", None, text)
    return get_employee(db, employee_id)


# -- leave -----------------------------------------------------------------------------------------

def list_leave_types(db: sqlite3.Connection) -> list[dict]:
    """Leave types: yearly days, whether a balance caps them, notice needed and how far back they may be recorded."""
    _me(db)
    return _rows(db, "SELECT * FROM leave_types ORDER BY code")


def list_public_holidays(db: sqlite3.Connection, year: int = 2026) -> list[dict]:
    """Company public holidays of a year (they do not count as leave days)."""
    _me(db)
    return _rows(db, "SELECT * FROM public_holidays WHERE day LIKE ? ORDER BY day", (f"{year}-%",))


def get_leave_balance(db: sqlite3.Connection, employee_id: Optional[str] = None, year: int = 2026) -> list[dict]:
    """Leave balances (entitled, used, pending, remaining days) of you or, for managers and HR, someone you manage.

    Args:
        employee_id: employee id such as EMP0042 (default: you)
    """
    e = _visible(db, employee_id or _me(db)["id"])
    rows = _rows(db, "SELECT * FROM leave_balances WHERE employee_id = ? AND year = ? ORDER BY leave_type", (e["id"], year))
    return [{**r, "remaining_days": r["entitled_days"] - r["used_days"] - r["pending_days"]} for r in rows]


def search_leave_requests(db: sqlite3.Connection, employee_id: Optional[str] = None,
                          status: Optional[Literal["pending", "approved", "rejected", "cancelled"]] = None,
                          team: bool = False, limit: int = 50) -> list[dict]:
    """Leave requests, newest start first: yours (default), one employee's you may see, or with team=True your
    direct reports' (HR with team=True: everyone's).

    Args:
        employee_id: employee id such as EMP0042
        limit: the most results to return (1-200)
    """
    me = _me(db)
    sql = "SELECT r.*, e.name AS employee_name FROM leave_requests r JOIN employees e ON e.id = r.employee_id WHERE 1 = 1"
    args: list = []
    if employee_id:
        _visible(db, employee_id)
        sql, args = sql + " AND r.employee_id = ?", args + [employee_id]
    elif team:
        if me["role"] != "hr":
            sql, args = sql + " AND e.manager_id = ?", args + [me["id"]]
    else:
        sql, args = sql + " AND r.employee_id = ?", args + [me["id"]]
    if status:
        sql, args = sql + " AND r.status = ?", args + [status]
    return _rows(db, sql + " ORDER BY r.start_date DESC, r.id DESC LIMIT ?", (*args, max(1, min(limit, 200))))


def get_leave_request(db: sqlite3.Connection, request_id: str) -> dict:
    """One leave request.

    Args:
        request_id: leave request id such as LR000123
    """
    req = _one(db, "SELECT * FROM leave_requests WHERE id = ?", (request_id,))
    if req is None:
        raise ValueError(f"no leave request {request_id}")
    _visible(db, req["employee_id"])
    return req


def request_leave(db: sqlite3.Connection, leave_type: LeaveType, start_date: str, end_date: str, reason: str = "",
                  employee_id: Optional[str] = None) -> dict:
    """Request leave (pending until approved). Days are working days (Monday-Friday, not public holidays) and, for capped
    types, must fit the remaining balance of that year. Annual and unpaid leave need notice; sick and compassionate
    leave may be recorded for recent past days. Managers and HR may record leave for someone they manage.

    Args:
        start_date: first day of leave like 2026-04-07
        end_date: last day of leave like 2026-04-10
        employee_id: employee id such as EMP0042 (default: you)
    """
    me = _me(db)
    e = _visible(db, employee_id or me["id"])
    if e["status"] != "active":
        raise ValueError(f"{e['name']} is {e['status']}; only active employees take leave")
    lt = _one(db, "SELECT * FROM leave_types WHERE code = ?", (leave_type,))
    if lt is None:
        raise ValueError(f"no leave type {leave_type!r} (see list_leave_types)")
    start, end = _date(start_date, "start_date"), _date(end_date, "end_date")
    if end < start:
        raise ValueError("end_date is before start_date")
    if start.year != end.year:
        raise ValueError("a request stays within one calendar year; split it at 31 December")
    today = _today(db)
    if start < today - timedelta(days=lt["backdate_days"]):
        raise ValueError(f"{leave_type} leave may be recorded at most {lt['backdate_days']} days back (today is {today})")
    if start < today + timedelta(days=lt["notice_days"]) and start >= today and lt["notice_days"]:
        raise ValueError(f"{leave_type} leave needs {lt['notice_days']} days' notice (today is {today})")
    if start < today and not lt["backdate_days"]:
        raise ValueError(f"{leave_type} leave cannot start in the past (today is {today})")
    days = _working_days(db, start, end)
    if days == 0:
        raise ValueError(f"{start_date}..{end_date} has no working days")
    clash = _one(db, "SELECT id, start_date, end_date FROM leave_requests WHERE employee_id = ? AND status IN ('pending', 'approved') "
                     "AND start_date <= ? AND end_date >= ?", (e["id"], end.isoformat(), start.isoformat()))
    if clash:
        raise ValueError(f"overlaps {clash['id']} ({clash['start_date']}..{clash['end_date']})")
    bal = _balance(db, e["id"], leave_type, start.year)
    if lt["capped"]:
        if bal is None:
            raise ValueError(f"{e['name']} has no {leave_type} balance for {start.year}")
        left = bal["entitled_days"] - bal["used_days"] - bal["pending_days"]
        if days > left:
            raise ValueError(f"{days:g} working days requested but only {left:g} {leave_type} days remain for {start.year}")
    now = _now(db)
    with _tx(db):
        rid = _next(db, "leave_requests", "LR", 6)
        db.execute("""INSERT INTO leave_requests (id, employee_id, leave_type, start_date, end_date, days, reason, status, requested_by,
                      approver_id, decided_at, decision_note, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, NULL, NULL, '', ?, ?)""",
                   (rid, e["id"], leave_type, start.isoformat(), end.isoformat(), days, reason.strip(), me["id"], now, now))
        _audit(db, me["id"], rid, "request", "status", None, "pending")
        _move_days(db, {"employee_id": e["id"], "leave_type": leave_type, "start_date": start.isoformat()}, me["id"], "request", pending=days)
    return get_leave_request(db, rid)


def _decidable(db, request_id: str) -> tuple[dict, dict]:
    me = _me(db)
    req = _one(db, "SELECT * FROM leave_requests WHERE id = ?", (request_id,))
    if req is None:
        raise ValueError(f"no leave request {request_id}")
    if req["employee_id"] == me["id"]:
        raise PermissionError("nobody approves or rejects their own leave; your manager or HR decides it")
    e = _employee(db, req["employee_id"])
    if not _may_manage(db, me, e):
        raise PermissionError(f"only {e['name']}'s manager ({e['manager_id']}) or HR may decide {request_id}")
    if req["status"] != "pending":
        raise ValueError(f"{request_id} is {req['status']}; only pending requests can be decided")
    return me, req


def approve_leave_request(db: sqlite3.Connection, request_id: str, note: str = "") -> dict:
    """Approve a pending leave request of one of your direct reports (HR: of anyone), never your own.
    The days move from pending to used in the balance.

    Args:
        request_id: leave request id such as LR000123
    """
    me, req = _decidable(db, request_id)
    with _tx(db):
        _update(db, "leave_requests", {"id": request_id}, request_id, req,
                {"status": "approved", "approver_id": me["id"], "decided_at": _now(db), "decision_note": note.strip()}, me["id"], "approve")
        _move_days(db, req, me["id"], "approve", used=req["days"], pending=-req["days"])
    return get_leave_request(db, request_id)


def reject_leave_request(db: sqlite3.Connection, request_id: str, note: str) -> dict:
    """Reject a pending leave request of one of your direct reports (HR: of anyone), with the reason; the pending
    days return to the balance.

    Args:
        request_id: leave request id such as LR000123
        note: why it is rejected (the employee sees it)
    """
    me, req = _decidable(db, request_id)
    text = _nonempty(note, "note", 5)
    with _tx(db):
        _update(db, "leave_requests", {"id": request_id}, request_id, req,
                {"status": "rejected", "approver_id": me["id"], "decided_at": _now(db), "decision_note": text}, me["id"], "reject")
        _move_days(db, req, me["id"], "reject", pending=-req["days"])
    return get_leave_request(db, request_id)


def cancel_leave_request(db: sqlite3.Connection, request_id: str, reason: str) -> dict:
    """Cancel a pending request, or an approved one that has not started yet; its days return to the balance.
    The employee, their manager or HR may cancel.

    Args:
        request_id: leave request id such as LR000123
    """
    me = _me(db)
    req = get_leave_request(db, request_id)
    if req["status"] in FINAL_LEAVE:
        raise ValueError(f"{request_id} is already {req['status']}")
    if req["status"] == "approved" and req["start_date"] <= _today(db).isoformat():
        raise ValueError(f"{request_id} has already started ({req['start_date']}); approved leave that has begun cannot be cancelled")
    text = _nonempty(reason, "reason", 3)
    with _tx(db):
        _update(db, "leave_requests", {"id": request_id}, request_id, req, {"status": "cancelled", "decision_note": text}, me["id"], "cancel")
        if req["status"] == "approved":
            _move_days(db, req, me["id"], "cancel", used=-req["days"])
        else:
            _move_days(db, req, me["id"], "cancel", pending=-req["days"])
    return get_leave_request(db, request_id)


def adjust_leave_balance(db: sqlite3.Connection, employee_id: str, leave_type: Literal["annual", "sick", "compassionate"],
                         delta_days: float, reason: str, year: int = 2026) -> dict:
    """HR only: add (or with a negative delta remove) entitled days, e.g. carry-over or a correction, with the reason.
    Nobody adjusts their own balance, and a balance never drops below the days already used or pending.

    Args:
        employee_id: employee id such as EMP0042
        delta_days: days to add (negative to remove), in half days
        reason: why (the audit trail keeps it)
    """
    me = _hr(db)
    e = _employee(db, employee_id)
    _not_terminated(e)
    if e["id"] == me["id"]:
        raise PermissionError("nobody adjusts their own leave balance; ask another HR colleague")
    if delta_days == 0 or abs(delta_days) > 10 or (delta_days * 2) != int(delta_days * 2):
        raise ValueError("delta_days must be a non-zero multiple of 0.5 between -10 and 10")
    text = _nonempty(reason, "reason", 5)
    bal = _balance(db, employee_id, leave_type, year)
    if bal is None:
        raise ValueError(f"{employee_id} has no {leave_type} balance for {year}")
    new = bal["entitled_days"] + delta_days
    if new < bal["used_days"] + bal["pending_days"]:
        raise ValueError(f"{new:g} entitled days would be fewer than the {bal['used_days'] + bal['pending_days']:g} used or pending")
    key = f"{employee_id}/{leave_type}/{year}"
    with _tx(db):
        _update(db, "leave_balances", {"employee_id": employee_id, "leave_type": leave_type, "year": year}, key, bal,
                {"entitled_days": new}, me["id"], "adjust")
        _audit(db, me["id"], key, "adjust", "reason", None, text)
    return next(r for r in get_leave_balance(db, employee_id, year) if r["leave_type"] == leave_type)


# -- onboarding ------------------------------------------------------------------------------------

TEMPLATE = [  # seq, title, owner role, mandatory: every new checklist starts with these tasks
    (1, "Send the contract and collect the signed copy", "hr", 1), (2, "Collect tax and bank details", "hr", 1),
    (3, "Enrol in payroll", "hr", 1), (4, "Request laptop and accounts from IT", "manager", 1),
    (5, "Assign an onboarding buddy", "manager", 0), (6, "Plan the first-week schedule", "manager", 0),
    (7, "Complete the safety induction", "employee", 1), (8, "Read and sign the code of conduct", "employee", 1),
]


def _checklist(db, checklist_id: str) -> dict:
    c = _one(db, "SELECT * FROM onboarding_checklists WHERE id = ?", (checklist_id,))
    if c is None:
        raise ValueError(f"no onboarding checklist {checklist_id}")
    return c


def search_onboarding_checklists(db: sqlite3.Connection, status: Optional[Literal["open", "completed", "cancelled"]] = None) -> list[dict]:
    """Onboarding checklists HR runs (HR sees all, a manager those of their new hires), with progress."""
    me = _me(db)
    sql = ("SELECT c.*, e.name AS employee_name, e.manager_id, (SELECT COUNT(*) FROM onboarding_tasks t WHERE t.checklist_id = c.id "
           "AND t.status = 'todo') AS open_tasks FROM onboarding_checklists c JOIN employees e ON e.id = c.employee_id WHERE 1 = 1")
    args: list = []
    if me["role"] != "hr":
        sql, args = sql + " AND e.manager_id = ?", args + [me["id"]]
    if status:
        sql, args = sql + " AND c.status = ?", args + [status]
    return _rows(db, sql + " ORDER BY c.start_date, c.id", args)


def get_onboarding_checklist(db: sqlite3.Connection, checklist_id: str) -> dict:
    """One onboarding checklist with its tasks.

    Args:
        checklist_id: checklist id such as OB0013
    """
    c = _checklist(db, checklist_id)
    _visible(db, c["employee_id"])
    return {**c, "tasks": _rows(db, "SELECT * FROM onboarding_tasks WHERE checklist_id = ? ORDER BY seq", (checklist_id,))}


def create_onboarding_checklist(db: sqlite3.Connection, employee_id: str, owner_id: Optional[str] = None) -> dict:
    """HR only: open the standard onboarding checklist for a pre-hire (one per person), run by owner_id (an HR person;
    default you).

    Args:
        employee_id: the new hire's employee id such as EMP0305
        owner_id: employee id of the HR person who runs it
    """
    me = _hr(db)
    e = _employee(db, employee_id)
    if e["status"] != "pre_hire":
        raise ValueError(f"{e['name']} is {e['status']}; checklists are for pre-hires")
    if _one(db, "SELECT id FROM onboarding_checklists WHERE employee_id = ?", (employee_id,)):
        raise ValueError(f"{e['name']} already has an onboarding checklist")
    owner = _employee(db, owner_id or me["id"])
    if owner["role"] != "hr" or owner["status"] != "active":
        raise ValueError(f"{owner['name']} is not active HR staff")
    now = _now(db)
    with _tx(db):
        cid = _next(db, "onboarding_checklists", "OB", 4)
        db.execute("""INSERT INTO onboarding_checklists (id, employee_id, owner_id, start_date, status, completed_at, created_at, updated_at)
                      VALUES (?, ?, ?, ?, 'open', NULL, ?, ?)""", (cid, employee_id, owner["id"], e["hire_date"], now, now))
        db.executemany("""INSERT INTO onboarding_tasks (checklist_id, seq, title, owner_role, mandatory, status, done_by, done_at, note)
                          VALUES (?, ?, ?, ?, ?, 'todo', NULL, NULL, '')""", [(cid, *t) for t in TEMPLATE])
        _audit(db, me["id"], cid, "create", "status", None, "open")
    return get_onboarding_checklist(db, cid)


def _task_for(db, checklist_id: str, seq: int) -> tuple[dict, dict, dict]:
    me = _me(db)
    c = _checklist(db, checklist_id)
    if c["status"] != "open":
        raise ValueError(f"{checklist_id} is {c['status']}")
    t = _one(db, "SELECT * FROM onboarding_tasks WHERE checklist_id = ? AND seq = ?", (checklist_id, seq))
    if t is None:
        raise ValueError(f"{checklist_id} has no task {seq}")
    if t["status"] != "todo":
        raise ValueError(f"task {seq} of {checklist_id} is already {t['status']}")
    e = _employee(db, c["employee_id"])
    allowed = me["role"] == "hr" if t["owner_role"] == "hr" else (
        me["id"] == e["manager_id"] or me["role"] == "hr" if t["owner_role"] == "manager" else me["role"] == "hr" or me["id"] == e["id"])
    if not allowed:
        raise PermissionError(f"task {seq} ({t['title']}) belongs to the {t['owner_role']}")
    return me, c, t


def complete_onboarding_task(db: sqlite3.Connection, checklist_id: str, seq: int, note: str = "") -> dict:
    """Mark a task done. HR tasks are done by HR, manager tasks by the new hire's manager (or HR), employee tasks by
    the new hire (or HR on their behalf).

    Args:
        checklist_id: checklist id such as OB0013
        seq: the task's number in the checklist
    """
    me, c, t = _task_for(db, checklist_id, seq)
    with _tx(db):
        db.execute("UPDATE onboarding_tasks SET status = 'done', done_by = ?, done_at = ?, note = ? WHERE checklist_id = ? AND seq = ?",
                   (me["id"], _now(db), note.strip(), checklist_id, seq))
        db.execute("UPDATE onboarding_checklists SET updated_at = ? WHERE id = ?", (_now(db), checklist_id))
        _audit(db, me["id"], f"{checklist_id}#{seq}", "complete", "status", "todo", "done")
    return get_onboarding_checklist(db, checklist_id)


def skip_onboarding_task(db: sqlite3.Connection, checklist_id: str, seq: int, reason: str) -> dict:
    """Skip an optional task with the reason (mandatory tasks cannot be skipped).

    Args:
        checklist_id: checklist id such as OB0013
        seq: the task's number in the checklist
    """
    me, c, t = _task_for(db, checklist_id, seq)
    if t["mandatory"]:
        raise ValueError(f"task {seq} ({t['title']}) is mandatory and cannot be skipped")
    text = _nonempty(reason, "reason", 5)
    with _tx(db):
        db.execute("UPDATE onboarding_tasks SET status = 'skipped', done_by = ?, done_at = ?, note = ? WHERE checklist_id = ? AND seq = ?",
                   (me["id"], _now(db), text, checklist_id, seq))
        db.execute("UPDATE onboarding_checklists SET updated_at = ? WHERE id = ?", (_now(db), checklist_id))
        _audit(db, me["id"], f"{checklist_id}#{seq}", "skip", "status", "todo", "skipped")
    return get_onboarding_checklist(db, checklist_id)


def start_employment(db: sqlite3.Connection, employee_id: str) -> dict:
    """HR only: on or after their hire date, make a pre-hire active. Their onboarding checklist must have every task
    done or skipped; it is completed with this call. The new hire gets this year's leave balances, pro rata.

    Args:
        employee_id: the new hire's employee id such as EMP0301
    """
    me = _hr(db)
    e = _employee(db, employee_id)
    if e["status"] != "pre_hire":
        raise ValueError(f"{e['name']} is {e['status']}, not a pre-hire")
    today = _today(db)
    if e["hire_date"] > today.isoformat():
        raise ValueError(f"{e['name']} starts on {e['hire_date']}; today is {today}")
    c = _one(db, "SELECT * FROM onboarding_checklists WHERE employee_id = ? AND status = 'open'", (employee_id,))
    if c is None:
        raise ValueError(f"{e['name']} has no open onboarding checklist")
    todo = _rows(db, "SELECT seq, title FROM onboarding_tasks WHERE checklist_id = ? AND status = 'todo' ORDER BY seq", (c["id"],))
    if todo:
        raise ValueError(f"{c['id']} still has open tasks: " + "; ".join(f"{t['seq']} {t['title']}" for t in todo))
    now = _now(db)
    months_left = 12 - today.month + 1
    with _tx(db):
        _update(db, "onboarding_checklists", {"id": c["id"]}, c["id"], c, {"status": "completed", "completed_at": now}, me["id"], "complete")
        _update(db, "employees", {"id": employee_id}, employee_id, e, {"status": "active"}, me["id"], "start")
        for lt in _rows(db, "SELECT * FROM leave_types WHERE capped = 1"):
            days = round(lt["default_days"] * months_left / 12 * 2) / 2 if lt["code"] == "annual" else lt["default_days"]
            db.execute("INSERT INTO leave_balances (employee_id, leave_type, year, entitled_days, used_days, pending_days, updated_at) "
                       "VALUES (?, ?, ?, ?, 0, 0, ?)", (employee_id, lt["code"], today.year, days, now))
            _audit(db, me["id"], f"{employee_id}/{lt['code']}/{today.year}", "start", "entitled_days", None, days)
    return get_employee(db, employee_id)


# -- job changes -----------------------------------------------------------------------------------

def _job_change(db, change_id: str) -> dict:
    jc = _one(db, "SELECT * FROM job_changes WHERE id = ?", (change_id,))
    if jc is None:
        raise ValueError(f"no job change {change_id}")
    return jc


def search_job_changes(db: sqlite3.Connection, employee_id: Optional[str] = None,
                       status: Optional[Literal["submitted", "approved", "rejected", "withdrawn"]] = None) -> list[dict]:
    """Promotions, transfers and salary changes: HR sees all, managers those of their reports, others their own."""
    me = _me(db)
    sql = "SELECT j.*, e.name AS employee_name FROM job_changes j JOIN employees e ON e.id = j.employee_id WHERE 1 = 1"
    args: list = []
    if employee_id:
        _visible(db, employee_id)
        sql, args = sql + " AND j.employee_id = ?", args + [employee_id]
    elif me["role"] != "hr":
        sql, args = sql + " AND (e.manager_id = ? OR j.employee_id = ?)", args + [me["id"], me["id"]]
    if status:
        sql, args = sql + " AND j.status = ?", args + [status]
    return _rows(db, sql + " ORDER BY j.created_at DESC, j.id DESC", args)


def get_job_change(db: sqlite3.Connection, change_id: str) -> dict:
    """One job change.

    Args:
        change_id: job change id such as JC0012
    """
    jc = _job_change(db, change_id)
    _visible(db, jc["employee_id"])
    return jc


def propose_job_change(db: sqlite3.Connection, employee_id: str, kind: Literal["promotion", "transfer", "salary"], new_salary: int,
                       effective_date: str, justification: str, new_position_id: Optional[str] = None,
                       new_manager_id: Optional[str] = None) -> dict:
    """Propose a promotion (a higher-grade position), a transfer (a position in another department, with the new manager)
    or a salary change (same position) for a direct report (HR: anyone). The salary must lie in the new position's band
    and the effective date must be the first of a future month. HR then decides it (decide_job_change).

    Args:
        employee_id: employee id such as EMP0042
        new_salary: yearly salary in EUR
        effective_date: the first of a month, like 2026-04-01
        new_position_id: position id such as POS012 (promotion and transfer)
        new_manager_id: the new manager's employee id (transfer)
    """
    me = _me(db)
    e = _employee(db, employee_id)
    _not_terminated(e)
    if e["id"] == me["id"]:
        raise PermissionError("nobody proposes a change to their own job or pay; your manager or HR does")
    if not _may_manage(db, me, e):
        raise PermissionError(f"only {e['name']}'s manager or HR may propose a change for them")
    if _one(db, "SELECT id FROM job_changes WHERE employee_id = ? AND status = 'submitted'", (employee_id,)):
        raise ValueError(f"{e['name']} already has a job change awaiting a decision")
    day = _date(effective_date, "effective_date")
    if day.day != 1 or day <= _today(db):
        raise ValueError("effective_date must be the first of a future month")
    text = _nonempty(justification, "justification", 10)
    old = _one(db, "SELECT * FROM positions WHERE id = ?", (e["position_id"],))
    new = old if kind == "salary" else _one(db, "SELECT * FROM positions WHERE id = ?", (new_position_id or "",))
    if new is None:
        raise ValueError(f"a {kind} needs new_position_id (see search_positions)")
    if kind == "salary" and new_position_id not in (None, old["id"]):
        raise ValueError("a salary change keeps the position; use promotion or transfer to change it")
    if kind == "promotion" and (new["grade"] <= old["grade"] or new["department_id"] != old["department_id"]):
        raise ValueError(f"a promotion moves to a higher grade in the same department ({old['title']} is grade {old['grade']})")
    manager = None
    if kind == "transfer":
        if new["department_id"] == old["department_id"]:
            raise ValueError("a transfer moves to another department")
        m = _employee(db, new_manager_id or "")
        if m["status"] != "active" or m["department_id"] != new["department_id"]:
            raise ValueError(f"the new manager must be active in {new['department_id']}")
        manager = m["id"]
    elif new_manager_id:
        raise ValueError("only a transfer changes the manager")
    if not new["min_salary"] <= new_salary <= new["max_salary"]:
        raise ValueError(f"{new_salary} is outside {new['title']}'s band {new['min_salary']}-{new['max_salary']}")
    if kind == "salary" and new_salary == e["salary"]:
        raise ValueError("the salary is unchanged")
    now = _now(db)
    with _tx(db):
        cid = _next(db, "job_changes", "JC", 4)
        db.execute("""INSERT INTO job_changes (id, employee_id, kind, old_position_id, new_position_id, old_salary, new_salary, new_manager_id,
                      effective_date, justification, status, requested_by, decided_by, decision_comment, created_at, updated_at)
                      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'submitted', ?, NULL, '', ?, ?)""",
                   (cid, employee_id, kind, old["id"], new["id"], e["salary"], new_salary, manager, day.isoformat(), text, me["id"], now, now))
        _audit(db, me["id"], cid, "propose", "status", None, "submitted")
    return get_job_change(db, cid)


def decide_job_change(db: sqlite3.Connection, change_id: str, decision: Literal["approved", "rejected"], comment: str) -> dict:
    """HR only: approve or reject a submitted job change, never one you proposed or one about yourself. Approval applies
    the new position, department, salary and manager to the employee at once.

    Args:
        change_id: job change id such as JC0012
    """
    me = _hr(db)
    jc = _job_change(db, change_id)
    if jc["status"] != "submitted":
        raise ValueError(f"{change_id} is {jc['status']}; only submitted changes can be decided")
    if me["id"] in (jc["requested_by"], jc["employee_id"]):
        raise PermissionError("nobody decides a job change they proposed or that is about themselves; another HR colleague must")
    text = _nonempty(comment, "comment", 5)
    e = _employee(db, jc["employee_id"])
    _not_terminated(e)
    with _tx(db):
        _update(db, "job_changes", {"id": change_id}, change_id, jc, {"status": decision, "decided_by": me["id"], "decision_comment": text},
                me["id"], "decide")
        if decision == "approved":
            pos = _one(db, "SELECT * FROM positions WHERE id = ?", (jc["new_position_id"],))
            changes = {"position_id": pos["id"], "department_id": pos["department_id"], "salary": jc["new_salary"]}
            if jc["new_manager_id"]:
                changes["manager_id"] = jc["new_manager_id"]
            _update(db, "employees", {"id": e["id"]}, e["id"], e, changes, me["id"], "job_change")
    return get_job_change(db, change_id)


# -- history ---------------------------------------------------------------------------------------

def get_hr_audit_trail(db: sqlite3.Connection, record: str) -> list[dict]:
    """Every recorded change of a record (HR only), oldest first: an employee, leave request, checklist or job change id.

    Args:
        record: EMP0042, LR000123, OB0013, OB0013#4, JC0012 or a balance like EMP0042/annual/2026
    """
    _hr(db)
    return _rows(db, "SELECT * FROM hr_audit WHERE record = ? OR record LIKE ? ORDER BY id", (record, record + "#%"))
