"""procurement gym tools: vendors, budgets, requisitions, approvals, purchase orders and goods receipts over SQLite.

Every public function whose first parameter is `db` is a tool. This file runs inside the trial's
sandbox with the system python3 and the standard library only. The agent acts as the user named by
`proc_context.current_user`; the clock is `proc_context.now`, so every write is deterministic.
Tools check the purchasing policies, raise ValueError/PermissionError with a message the model sees,
commit their writes as one transaction and record every changed field in `proc_audit`.
"""

import sqlite3
from contextlib import contextmanager
from datetime import date
from typing import Literal, Optional

APPROVERS = ("approver", "finance")


# -- helpers (private: not tools) ------------------------------------------------------------------

def _rows(db: sqlite3.Connection, sql: str, args=()) -> list[dict]:
    cur = db.execute(sql, args)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def _one(db: sqlite3.Connection, sql: str, args=()) -> Optional[dict]:
    rows = _rows(db, sql, args)
    return rows[0] if rows else None


def _ctx(db, key: str) -> str:
    row = _one(db, "SELECT value FROM proc_context WHERE key = ?", (key,))
    if row is None:
        raise RuntimeError(f"proc_context has no '{key}' row")
    return row["value"]


def _now(db) -> str:
    return _ctx(db, "now")


def _me(db) -> dict:
    uid = _ctx(db, "current_user")
    me = _one(db, "SELECT * FROM proc_users WHERE id = ?", (uid,))
    if me is None or not me["active"]:
        raise PermissionError(f"the acting user {uid} is not an active procurement user")
    return me


def _buyer(db) -> dict:
    me = _me(db)
    if me["role"] != "buyer":
        raise PermissionError(f"{me['name']} is not a buyer; only the procurement team's buyers place and change orders")
    return me


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
    db.execute("INSERT INTO proc_audit (at, actor_id, record, action, field, old_value, new_value) VALUES (?, ?, ?, ?, ?, ?, ?)",
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


def _like(q: str) -> str:
    return f"%{q.strip().lower()}%"


def _get(db, table: str, key: str, what: str, hint: str) -> dict:
    row = _one(db, f"SELECT * FROM {table} WHERE id = ?", (key,))
    if row is None:
        raise ValueError(f"no {what} {key} (see {hint})")
    return row


def _budget(db, cost_centre_id: str, year: int) -> dict:
    b = _one(db, "SELECT * FROM budgets WHERE cost_centre_id = ? AND year = ?", (cost_centre_id, year))
    if b is None:
        raise ValueError(f"{cost_centre_id} has no budget for {year}")
    return b


def _shift_budget(db, cost_centre_id: str, year: int, actor: str, action: str, committed: float = 0.0, spent: float = 0.0) -> None:
    b = _budget(db, cost_centre_id, year)
    _update(db, "budgets", {"cost_centre_id": cost_centre_id, "year": year}, f"{cost_centre_id}/{year}", b,
            {"committed": round(b["committed"] + committed, 2), "spent": round(b["spent"] + spent, 2)}, actor, action)


def _year(db) -> int:
    return int(_now(db)[:4])


def _total(db, requisition_id: str) -> float:
    row = _one(db, "SELECT COALESCE(SUM(quantity * unit_price), 0) AS t FROM requisition_lines WHERE requisition_id = ?", (requisition_id,))
    return round(row["t"], 2)


def _usable_vendor(db, vendor_id: str) -> dict:
    v = _get(db, "vendors", vendor_id, "vendor", "search_vendors")
    if v["status"] != "active":
        raise ValueError(f"{v['name']} is {v['status']}" + (f" ({v['status_reason']})" if v["status_reason"] else "")
                         + "; only active vendors can be ordered from")
    return v


# -- people, vendors, budgets ----------------------------------------------------------------------

def get_my_procurement_profile(db: sqlite3.Connection) -> dict:
    """Who you are acting as: your role, cost centre, approval limit and the current time."""
    return {**_me(db), "now": _now(db)}


def search_users(db: sqlite3.Connection, query: str = "", role: Optional[Literal["requester", "buyer", "approver", "finance"]] = None,
                 limit: int = 20) -> list[dict]:
    """Find procurement users by name, email or id, optionally by role.

    Args:
        query: words to look for (empty matches everything)
        limit: the most results to return (1-100)
    """
    _me(db)
    q = _like(query)
    sql = "SELECT * FROM proc_users WHERE (lower(name) LIKE ? OR lower(email) LIKE ? OR lower(id) LIKE ?)"
    args: list = [q, q, q]
    if role:
        sql, args = sql + " AND role = ?", args + [role]
    return _rows(db, sql + " ORDER BY name LIMIT ?", (*args, max(1, min(limit, 100))))


def search_vendors(db: sqlite3.Connection, query: str = "", category: Optional[str] = None,
                   status: Optional[Literal["active", "on_hold", "blocked"]] = None) -> list[dict]:
    """Find vendors by name or id, category (it_hardware, software, office, facilities, logistics, services, marketing) or status."""
    _me(db)
    sql = "SELECT * FROM vendors WHERE (lower(name) LIKE ? OR lower(id) LIKE ?)"
    args: list = [_like(query), _like(query)]
    if category:
        sql, args = sql + " AND category = ?", args + [category]
    if status:
        sql, args = sql + " AND status = ?", args + [status]
    return _rows(db, sql + " ORDER BY name", args)


def get_vendor(db: sqlite3.Connection, vendor_id: str) -> dict:
    """One vendor with its open purchase orders.

    Args:
        vendor_id: vendor id such as VEN007
    """
    _me(db)
    v = _get(db, "vendors", vendor_id, "vendor", "search_vendors")
    pos = _rows(db, "SELECT id, status, total FROM purchase_orders WHERE vendor_id = ? AND status IN ('issued', 'partially_received') ORDER BY id",
                (vendor_id,))
    return {**v, "open_orders": pos}


def set_vendor_status(db: sqlite3.Connection, vendor_id: str, status: Literal["active", "on_hold", "blocked"], reason: str) -> dict:
    """Finance only: put a vendor on hold, block it or make it active again, with the reason. A vendor with open
    orders cannot be blocked (cancel or receive them first).

    Args:
        vendor_id: vendor id such as VEN007
    """
    me = _me(db)
    if me["role"] != "finance":
        raise PermissionError("only finance may change a vendor's status")
    v = _get(db, "vendors", vendor_id, "vendor", "search_vendors")
    text = _nonempty(reason, "reason", 5)
    if status == v["status"]:
        raise ValueError(f"{v['name']} is already {status}")
    if status == "blocked" and get_vendor(db, vendor_id)["open_orders"]:
        raise ValueError(f"{v['name']} has open purchase orders; cancel or receive them before blocking it")
    with _tx(db):
        _update(db, "vendors", {"id": vendor_id}, vendor_id, v, {"status": status, "status_reason": text}, me["id"], "status")
    return get_vendor(db, vendor_id)


def list_cost_centres(db: sqlite3.Connection) -> list[dict]:
    """Cost centres with their owner and this year's budget (amount, committed, spent, available)."""
    _me(db)
    return _rows(db, """SELECT c.id, c.name, c.owner_id, u.name AS owner_name, b.amount, b.committed, b.spent,
                        ROUND(b.amount - b.committed - b.spent, 2) AS available FROM cost_centres c
                        LEFT JOIN proc_users u ON u.id = c.owner_id LEFT JOIN budgets b ON b.cost_centre_id = c.id AND b.year = ?
                        ORDER BY c.id""", (_year(db),))


def get_budget(db: sqlite3.Connection, cost_centre_id: str, year: Optional[int] = None) -> dict:
    """A cost centre's budget for a year (default this year): amount, committed, spent and available.

    Args:
        cost_centre_id: cost centre id such as CC-130
    """
    _me(db)
    b = _budget(db, cost_centre_id, year or _year(db))
    return {**b, "available": round(b["amount"] - b["committed"] - b["spent"], 2)}


# -- requisitions ----------------------------------------------------------------------------------

def _requisition(db, requisition_id: str) -> dict:
    return _get(db, "requisitions", requisition_id, "requisition", "search_requisitions")


def search_requisitions(db: sqlite3.Connection, query: str = "", status: Optional[str] = None,
                        cost_centre_id: Optional[str] = None, requester_id: Optional[str] = None, limit: int = 50) -> list[dict]:
    """Find purchase requisitions by title, status (draft, submitted, approved, rejected, cancelled, ordered), cost centre
    or requester; newest first.

    Args:
        limit: the most results to return (1-200)
    """
    _me(db)
    sql = "SELECT * FROM requisitions WHERE lower(title) LIKE ?"
    args: list = [_like(query)]
    for col, val in (("status", status), ("cost_centre_id", cost_centre_id), ("requester_id", requester_id)):
        if val:
            sql, args = sql + f" AND {col} = ?", args + [val]
    return _rows(db, sql + " ORDER BY created_at DESC, id DESC LIMIT ?", (*args, max(1, min(limit, 200))))


def get_requisition(db: sqlite3.Connection, requisition_id: str) -> dict:
    """One requisition with its lines and, once ordered, its purchase order id.

    Args:
        requisition_id: requisition id such as PR00042
    """
    _me(db)
    r = _requisition(db, requisition_id)
    lines = _rows(db, "SELECT line_no, description, quantity, unit_price, ROUND(quantity * unit_price, 2) AS amount "
                      "FROM requisition_lines WHERE requisition_id = ? ORDER BY line_no", (requisition_id,))
    po = _one(db, "SELECT id FROM purchase_orders WHERE requisition_id = ?", (requisition_id,))
    return {**r, "lines": lines, "purchase_order_id": po["id"] if po else None}


def create_requisition(db: sqlite3.Connection, title: str, vendor_id: str, needed_by: str, justification: str,
                       cost_centre_id: Optional[str] = None) -> dict:
    """Start a draft requisition for your cost centre (buyers: any cost centre) from an active vendor; add lines, then submit.

    Args:
        vendor_id: vendor id such as VEN007
        needed_by: the date the goods are needed, like 2026-04-15
        cost_centre_id: cost centre id such as CC-130 (default: yours)
    """
    me = _me(db)
    cc = cost_centre_id or me["cost_centre_id"]
    _get(db, "cost_centres", cc, "cost centre", "list_cost_centres")
    if cc != me["cost_centre_id"] and me["role"] != "buyer":
        raise PermissionError(f"you may raise requisitions only for your own cost centre ({me['cost_centre_id']})")
    _usable_vendor(db, vendor_id)
    try:
        need = date.fromisoformat(needed_by)
    except (TypeError, ValueError):
        raise ValueError(f"needed_by must be a date like 2026-04-15, got {needed_by!r}") from None
    if need.isoformat() <= _now(db)[:10]:
        raise ValueError("needed_by must be in the future")
    now = _now(db)
    with _tx(db):
        rid = _next(db, "requisitions", "PR", 5)
        db.execute("""INSERT INTO requisitions (id, title, requester_id, cost_centre_id, vendor_id, justification, needed_by, status, total,
                      approver_id, decided_at, decision_note, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'draft', 0, NULL, NULL, '', ?, ?)""",
                   (rid, _nonempty(title, "title", 3), me["id"], cc, vendor_id, _nonempty(justification, "justification", 10), need.isoformat(), now, now))
        _audit(db, me["id"], rid, "create", "status", None, "draft")
    return get_requisition(db, rid)


def _own_draft(db, requisition_id: str) -> tuple[dict, dict]:
    me = _me(db)
    r = _requisition(db, requisition_id)
    if r["requester_id"] != me["id"]:
        raise PermissionError(f"{requisition_id} is {r['requester_id']}'s requisition; only the requester edits it")
    if r["status"] != "draft":
        raise ValueError(f"{requisition_id} is {r['status']}; only drafts can be edited")
    return me, r


def add_requisition_line(db: sqlite3.Connection, requisition_id: str, description: str, quantity: int, unit_price: float) -> dict:
    """Add a line (what, how many, net unit price in EUR) to your draft requisition.

    Args:
        requisition_id: requisition id such as PR00042
    """
    me, r = _own_draft(db, requisition_id)
    if quantity <= 0 or unit_price < 0:
        raise ValueError("quantity must be positive and unit_price not negative")
    with _tx(db):
        n = _one(db, "SELECT COALESCE(MAX(line_no), 0) + 1 AS n FROM requisition_lines WHERE requisition_id = ?", (requisition_id,))["n"]
        db.execute("INSERT INTO requisition_lines (requisition_id, line_no, description, quantity, unit_price) VALUES (?, ?, ?, ?, ?)",
                   (requisition_id, n, _nonempty(description, "description", 3), quantity, round(unit_price, 2)))
        _audit(db, me["id"], f"{requisition_id}#{n}", "add_line", "quantity", None, quantity)
        _update(db, "requisitions", {"id": requisition_id}, requisition_id, r, {"total": _total(db, requisition_id)}, me["id"], "add_line")
    return get_requisition(db, requisition_id)


def remove_requisition_line(db: sqlite3.Connection, requisition_id: str, line_no: int) -> dict:
    """Remove a line from your draft requisition.

    Args:
        requisition_id: requisition id such as PR00042
    """
    me, r = _own_draft(db, requisition_id)
    if not _one(db, "SELECT 1 AS x FROM requisition_lines WHERE requisition_id = ? AND line_no = ?", (requisition_id, line_no)):
        raise ValueError(f"{requisition_id} has no line {line_no}")
    with _tx(db):
        db.execute("DELETE FROM requisition_lines WHERE requisition_id = ? AND line_no = ?", (requisition_id, line_no))
        _audit(db, me["id"], f"{requisition_id}#{line_no}", "remove_line")
        _update(db, "requisitions", {"id": requisition_id}, requisition_id, r, {"total": _total(db, requisition_id)}, me["id"], "remove_line")
    return get_requisition(db, requisition_id)


def submit_requisition(db: sqlite3.Connection, requisition_id: str) -> dict:
    """Submit your draft for approval. It needs at least one line, an active vendor and enough available budget in its
    cost centre for its total.

    Args:
        requisition_id: requisition id such as PR00042
    """
    me, r = _own_draft(db, requisition_id)
    total = _total(db, requisition_id)
    if total <= 0:
        raise ValueError(f"{requisition_id} has no lines with an amount")
    _usable_vendor(db, r["vendor_id"])
    b = get_budget(db, r["cost_centre_id"])
    if total > b["available"]:
        raise ValueError(f"{total:.2f} EUR exceeds the {b['available']:.2f} EUR still available in {r['cost_centre_id']}'s budget")
    with _tx(db):
        _update(db, "requisitions", {"id": requisition_id}, requisition_id, r, {"status": "submitted", "total": total}, me["id"], "submit")
    return get_requisition(db, requisition_id)


def _decidable(db, requisition_id: str) -> tuple[dict, dict]:
    me = _me(db)
    r = _requisition(db, requisition_id)
    if r["status"] != "submitted":
        raise ValueError(f"{requisition_id} is {r['status']}; only submitted requisitions can be decided")
    if r["requester_id"] == me["id"]:
        raise PermissionError("nobody approves or rejects their own requisition")
    if me["role"] not in APPROVERS:
        raise PermissionError(f"{me['name']} is a {me['role']}; only approvers and finance decide requisitions")
    owner = _get(db, "cost_centres", r["cost_centre_id"], "cost centre", "list_cost_centres")["owner_id"]
    if me["role"] != "finance" and owner != me["id"]:
        raise PermissionError(f"only {r['cost_centre_id']}'s owner ({owner}) or finance may decide {requisition_id}")
    return me, r


def approve_requisition(db: sqlite3.Connection, requisition_id: str, note: str = "") -> dict:
    """Approve a submitted requisition of a cost centre you own (finance: any), never your own, up to your approval limit.
    Approval commits its total against the cost centre's budget.

    Args:
        requisition_id: requisition id such as PR00042
    """
    me, r = _decidable(db, requisition_id)
    if r["total"] > me["approval_limit"]:
        raise PermissionError(f"{r['total']:.2f} EUR is above your approval limit of {me['approval_limit']} EUR; it needs an approver with a higher limit")
    b = get_budget(db, r["cost_centre_id"])
    if r["total"] > b["available"]:
        raise ValueError(f"{r['total']:.2f} EUR exceeds the {b['available']:.2f} EUR still available in {r['cost_centre_id']}'s budget")
    with _tx(db):
        _update(db, "requisitions", {"id": requisition_id}, requisition_id, r,
                {"status": "approved", "approver_id": me["id"], "decided_at": _now(db), "decision_note": note.strip()}, me["id"], "approve")
        _shift_budget(db, r["cost_centre_id"], _year(db), me["id"], "approve", committed=r["total"])
    return get_requisition(db, requisition_id)


def reject_requisition(db: sqlite3.Connection, requisition_id: str, note: str) -> dict:
    """Reject a submitted requisition you may decide, with the reason.

    Args:
        requisition_id: requisition id such as PR00042
        note: why it is rejected (the requester sees it)
    """
    me, r = _decidable(db, requisition_id)
    text = _nonempty(note, "note", 5)
    with _tx(db):
        _update(db, "requisitions", {"id": requisition_id}, requisition_id, r,
                {"status": "rejected", "approver_id": me["id"], "decided_at": _now(db), "decision_note": text}, me["id"], "reject")
    return get_requisition(db, requisition_id)


def cancel_requisition(db: sqlite3.Connection, requisition_id: str, reason: str) -> dict:
    """Cancel your own requisition before it is ordered (an approved one releases its committed budget).

    Args:
        requisition_id: requisition id such as PR00042
    """
    me = _me(db)
    r = _requisition(db, requisition_id)
    if r["requester_id"] != me["id"] and me["role"] != "buyer":
        raise PermissionError(f"only the requester or a buyer may cancel {requisition_id}")
    if r["status"] not in ("draft", "submitted", "approved"):
        raise ValueError(f"{requisition_id} is {r['status']}; it can no longer be cancelled" + (" (cancel its purchase order)" if r["status"] == "ordered" else ""))
    text = _nonempty(reason, "reason", 5)
    with _tx(db):
        _update(db, "requisitions", {"id": requisition_id}, requisition_id, r, {"status": "cancelled", "decision_note": text}, me["id"], "cancel")
        if r["status"] == "approved":
            _shift_budget(db, r["cost_centre_id"], _year(db), me["id"], "cancel", committed=-r["total"])
    return get_requisition(db, requisition_id)


# -- purchase orders and receipts ------------------------------------------------------------------

def _po(db, po_id: str) -> dict:
    return _get(db, "purchase_orders", po_id, "purchase order", "search_purchase_orders")


def search_purchase_orders(db: sqlite3.Connection, vendor_id: Optional[str] = None, status: Optional[str] = None,
                           requisition_id: Optional[str] = None) -> list[dict]:
    """Find purchase orders by vendor, status (issued, partially_received, received, closed, cancelled) or requisition."""
    _me(db)
    sql = "SELECT p.*, r.title, r.cost_centre_id, r.requester_id FROM purchase_orders p JOIN requisitions r ON r.id = p.requisition_id WHERE 1 = 1"
    args: list = []
    for col, val in (("p.vendor_id", vendor_id), ("p.status", status), ("p.requisition_id", requisition_id)):
        if val:
            sql, args = sql + f" AND {col} = ?", args + [val]
    return _rows(db, sql + " ORDER BY p.issued_at DESC, p.id DESC", args)


def get_purchase_order(db: sqlite3.Connection, po_id: str) -> dict:
    """One purchase order with its lines (ordered and received quantities) and goods receipts.

    Args:
        po_id: purchase order id such as PO000042
    """
    _me(db)
    po = _po(db, po_id)
    lines = _rows(db, "SELECT * FROM po_lines WHERE po_id = ? ORDER BY line_no", (po_id,))
    receipts = _rows(db, "SELECT * FROM goods_receipts WHERE po_id = ? ORDER BY id", (po_id,))
    return {**po, "lines": lines, "receipts": receipts}


def create_purchase_order(db: sqlite3.Connection, requisition_id: str) -> dict:
    """Buyers only: issue the purchase order for an approved requisition (its vendor must still be active). The order
    copies the requisition's lines and the requisition becomes ordered.

    Args:
        requisition_id: requisition id such as PR00042
    """
    me = _buyer(db)
    r = _requisition(db, requisition_id)
    if r["status"] != "approved":
        raise ValueError(f"{requisition_id} is {r['status']}; only approved requisitions are ordered")
    _usable_vendor(db, r["vendor_id"])
    now = _now(db)
    with _tx(db):
        pid = _next(db, "purchase_orders", "PO", 6)
        db.execute("INSERT INTO purchase_orders (id, requisition_id, vendor_id, buyer_id, status, total, issued_at, updated_at) "
                   "VALUES (?, ?, ?, ?, 'issued', ?, ?, ?)", (pid, requisition_id, r["vendor_id"], me["id"], r["total"], now, now))
        db.execute("INSERT INTO po_lines (po_id, line_no, description, quantity, unit_price, received_qty) "
                   "SELECT ?, line_no, description, quantity, unit_price, 0 FROM requisition_lines WHERE requisition_id = ?", (pid, requisition_id))
        _audit(db, me["id"], pid, "issue", "status", None, "issued")
        _update(db, "requisitions", {"id": requisition_id}, requisition_id, r, {"status": "ordered"}, me["id"], "order")
    return get_purchase_order(db, pid)


def receive_goods(db: sqlite3.Connection, po_id: str, line_no: int, quantity: int, note: str = "") -> dict:
    """Record goods received against a line of an open purchase order (by the requisition's requester or a buyer),
    never more than is still outstanding. The received value moves from committed to spent in the budget.

    Args:
        po_id: purchase order id such as PO000042
        line_no: the order line received
        quantity: how many arrived
    """
    me = _me(db)
    po = _po(db, po_id)
    r = _requisition(db, po["requisition_id"])
    if me["id"] != r["requester_id"] and me["role"] != "buyer":
        raise PermissionError(f"only the requester ({r['requester_id']}) or a buyer may receive goods for {po_id}")
    if po["status"] not in ("issued", "partially_received"):
        raise ValueError(f"{po_id} is {po['status']}; goods are received only on open orders")
    line = _one(db, "SELECT * FROM po_lines WHERE po_id = ? AND line_no = ?", (po_id, line_no))
    if line is None:
        raise ValueError(f"{po_id} has no line {line_no}")
    left = line["quantity"] - line["received_qty"]
    if quantity <= 0 or quantity > left:
        raise ValueError(f"line {line_no} has {left} outstanding; quantity must be 1..{left}")
    now = _now(db)
    with _tx(db):
        gid = _next(db, "goods_receipts", "GR", 6)
        db.execute("INSERT INTO goods_receipts (id, po_id, line_no, quantity, received_by, received_at, note) VALUES (?, ?, ?, ?, ?, ?, ?)",
                   (gid, po_id, line_no, quantity, me["id"], now, note.strip()))
        db.execute("UPDATE po_lines SET received_qty = received_qty + ? WHERE po_id = ? AND line_no = ?", (quantity, po_id, line_no))
        _audit(db, me["id"], f"{po_id}#{line_no}", "receive", "received_qty", line["received_qty"], line["received_qty"] + quantity)
        open_qty = _one(db, "SELECT SUM(quantity - received_qty) AS n FROM po_lines WHERE po_id = ?", (po_id,))["n"]
        _update(db, "purchase_orders", {"id": po_id}, po_id, po, {"status": "received" if open_qty == 0 else "partially_received"}, me["id"], "receive")
        value = round(quantity * line["unit_price"], 2)
        _shift_budget(db, r["cost_centre_id"], _year(db), me["id"], "receive", committed=-value, spent=value)
    return get_purchase_order(db, po_id)


def cancel_purchase_order(db: sqlite3.Connection, po_id: str, reason: str) -> dict:
    """Buyers only: cancel an issued order nothing has been received on. Its requisition is cancelled too and the
    committed budget is released.

    Args:
        po_id: purchase order id such as PO000042
    """
    me = _buyer(db)
    po = _po(db, po_id)
    if po["status"] != "issued":
        raise ValueError(f"{po_id} is {po['status']}; only issued orders with nothing received can be cancelled")
    text = _nonempty(reason, "reason", 5)
    r = _requisition(db, po["requisition_id"])
    with _tx(db):
        _update(db, "purchase_orders", {"id": po_id}, po_id, po, {"status": "cancelled"}, me["id"], "cancel")
        _audit(db, me["id"], po_id, "cancel", "reason", None, text)
        _update(db, "requisitions", {"id": r["id"]}, r["id"], r, {"status": "cancelled"}, me["id"], "cancel")
        _shift_budget(db, r["cost_centre_id"], _year(db), me["id"], "cancel", committed=-po["total"])
    return get_purchase_order(db, po_id)


def close_purchase_order(db: sqlite3.Connection, po_id: str) -> dict:
    """Buyers only: close a fully received order.

    Args:
        po_id: purchase order id such as PO000042
    """
    me = _buyer(db)
    po = _po(db, po_id)
    if po["status"] != "received":
        raise ValueError(f"{po_id} is {po['status']}; only fully received orders are closed")
    with _tx(db):
        _update(db, "purchase_orders", {"id": po_id}, po_id, po, {"status": "closed"}, me["id"], "close")
    return get_purchase_order(db, po_id)


def get_procurement_audit_trail(db: sqlite3.Connection, record: str) -> list[dict]:
    """Every recorded change of a record, oldest first: PR00042 (and its lines), PO000042 (and its lines), VEN007 or CC-130/2026.

    Args:
        record: a requisition, order, vendor or budget key
    """
    _me(db)
    return _rows(db, "SELECT * FROM proc_audit WHERE record = ? OR record LIKE ? ORDER BY id", (record, record + "#%"))
