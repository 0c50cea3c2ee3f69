"""collab gym tools: company mail and calendars over SQLite.

Every public function whose first parameter is `db` is a tool; this file runs inside the trial's
sandbox with the system python3 and the standard library only. The agent acts as the address in
`collab_context.current_user`; the clock is `collab_context.now`. Tools check the rules, raise
ValueError/PermissionError with a message the model sees, and record every write in collab_audit.
"""

import re
import sqlite3
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Literal, Optional

ADDRESS = re.compile(r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$")
WORK_START, WORK_END = 8, 18  # working hours, UTC, Monday to Friday
STAMP = "%Y-%m-%dT%H:%M:%SZ"


# -- helpers (private: not tools) ------------------------------------------------------------------

def _rows(db, sql: str, args=()) -> list[dict]:
    cur = db.execute(sql, args)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def _one(db, sql: str, args=()) -> Optional[dict]:
    rows = _rows(db, sql, args)
    return rows[0] if rows else None


def _ctx(db, key: str) -> str:
    row = _one(db, "SELECT value FROM collab_context WHERE key = ?", (key,))
    if row is None:
        raise RuntimeError(f"collab_context has no '{key}' row")
    return row["value"]


def _now(db) -> str:
    return _ctx(db, "now")


def _me(db) -> dict:
    address = _ctx(db, "current_user")
    box = _one(db, "SELECT * FROM mailboxes WHERE address = ?", (address,))
    if box is None or box["is_external"] or not box["active"]:
        raise PermissionError(f"the acting user {address} has no active internal mailbox")
    return box


def _time(value: str, field: str) -> datetime:
    try:
        return datetime.strptime(value, STAMP)
    except (TypeError, ValueError):
        raise ValueError(f"{field} must look like 2026-03-20T14:00:00Z, got {value!r}") from None


@contextmanager
def _tx(db):
    """One tool call = one transaction."""
    if not db.in_transaction:
        db.execute("PRAGMA foreign_keys = ON")
    try:
        yield
        db.commit()
    except BaseException:
        db.rollback()
        raise


def _audit(db, actor: str, obj: str, action: str, detail: str = "") -> None:
    db.execute("INSERT INTO collab_audit (at, actor, object, action, detail) VALUES (?, ?, ?, ?, ?)",
               (_now(db), actor, obj, action, detail))


def _next_id(db, table: str, prefix: str, width: int) -> str:
    row = _one(db, f"SELECT MAX(CAST(substr(id, {len(prefix) + 1}) AS INTEGER)) AS n FROM {table}")
    return f"{prefix}{(row['n'] or 0) + 1:0{width}d}"


def _addresses(db, addresses: list[str], field: str, internal_only: bool = False) -> list[str]:
    out = []
    for a in addresses:
        a = a.strip().lower()
        if not ADDRESS.match(a):
            raise ValueError(f"{field}: {a!r} is not an email address")
        box = _one(db, "SELECT * FROM mailboxes WHERE address = ?", (a,))
        internal = a.endswith("@" + _ctx(db, "current_user").split("@", 1)[1])
        if internal and (box is None or not box["active"]):
            raise ValueError(f"{field}: {a} is not an active mailbox in the directory")
        if internal_only and (box is None or box["is_external"]):
            raise ValueError(f"{field}: {a} is not an internal colleague")
        if a not in out:
            out.append(a)
    return out


def _folder(db, mailbox: str, name: str) -> dict:
    f = _one(db, "SELECT * FROM mail_folders WHERE mailbox = ? AND name = ?", (mailbox, name.strip().lower()))
    if f is None:
        raise ValueError(f"no folder {name!r} (see list_mail_folders)")
    return f


def _my_message(db, message_id: str) -> dict:
    me = _me(db)
    msg = _one(db, "SELECT * FROM messages WHERE id = ?", (message_id,))
    if msg is None or msg["mailbox"] != me["address"]:
        raise ValueError(f"no message {message_id} in your mailbox")
    return msg


def _deliver(db, sender: str, to: list[str], cc: list[str], subject: str, body: str, thread: Optional[str],
             in_reply_to: Optional[str]) -> str:
    """The sender's copy in sent, one copy in each internal recipient's inbox; returns the sender's copy id."""
    now = _now(db)
    thread = thread or _next_id(db, "messages", "MSG", 6).replace("MSG", "THR")
    copies = [(sender, "sent")] + [(a, "inbox") for a in to + cc
                                   if (b := _one(db, "SELECT * FROM mailboxes WHERE address = ?", (a,))) and not b["is_external"]]
    first = None
    for owner, folder in copies:
        mid = _next_id(db, "messages", "MSG", 6)
        parent = None
        if in_reply_to:  # each copy answers the owner's own copy of the parent, if they have one
            orig = _one(db, "SELECT thread_id FROM messages WHERE id = ?", (in_reply_to,))
            own = _one(db, "SELECT id FROM messages WHERE mailbox = ? AND thread_id = ? ORDER BY sent_at DESC, id DESC",
                       (owner, orig["thread_id"])) if orig else None
            parent = in_reply_to if owner == sender else (own["id"] if own else None)
        db.execute("""INSERT INTO messages (id, mailbox, folder_id, thread_id, in_reply_to, sender, subject, body, sent_at, is_read, is_flagged)
                      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)""",
                   (mid, owner, _folder(db, owner, folder)["id"], thread, parent, sender, subject, body, now, int(owner == sender)))
        db.executemany("INSERT INTO message_recipients (message_id, address, kind) VALUES (?, ?, ?)",
                       [(mid, a, "to") for a in to] + [(mid, a, "cc") for a in cc])
        first = first or mid
    _audit(db, sender, first, "send", f"to={','.join(to)} cc={','.join(cc)}")
    return first


def _message_view(db, msg: dict) -> dict:
    rec = _rows(db, "SELECT address, kind FROM message_recipients WHERE message_id = ? ORDER BY kind DESC, address", (msg["id"],))
    folder = _one(db, "SELECT name FROM mail_folders WHERE id = ?", (msg["folder_id"],))["name"]
    view = {k: msg[k] for k in ("id", "thread_id", "in_reply_to", "sender", "subject", "body", "sent_at", "is_read", "is_flagged")}
    return {**view, "folder": folder, "to": [r["address"] for r in rec if r["kind"] == "to"],
            "cc": [r["address"] for r in rec if r["kind"] == "cc"]}


# -- directory and mail ----------------------------------------------------------------------------

def get_my_profile(db: sqlite3.Connection) -> dict:
    """Who you are acting as in mail and calendar (address, name, title), your calendar id and the current time."""
    me = _me(db)
    cal = _one(db, "SELECT id FROM calendars WHERE owner = ?", (me["address"],))
    return {**me, "calendar_id": cal["id"] if cal else None, "now": _now(db),
            "working_hours": f"{WORK_START:02d}:00-{WORK_END:02d}:00 UTC, Monday to Friday"}


def search_directory(db: sqlite3.Connection, query: str, include_external: bool = True, limit: int = 20) -> list[dict]:
    """Find people and external contacts by name, address, department or title.

    Args:
        query: words to look for (empty matches everything)
        limit: the most results to return (1-100)
    """
    q = f"%{query.strip().lower()}%"
    sql = ("SELECT address, display_name, department, title, is_external, active FROM mailboxes WHERE (lower(address) LIKE ? "
           "OR lower(display_name) LIKE ? OR lower(department) LIKE ? OR lower(title) LIKE ?)")
    if not include_external:
        sql += " AND is_external = 0"
    return _rows(db, sql + " ORDER BY is_external, display_name LIMIT ?", (q, q, q, q, max(1, min(limit, 100))))


def list_mail_folders(db: sqlite3.Connection) -> list[dict]:
    """Your mail folders with their message and unread counts."""
    me = _me(db)
    return _rows(db, """SELECT f.name, f.system, COUNT(m.id) AS messages, COALESCE(SUM(1 - m.is_read), 0) AS unread
                        FROM mail_folders f LEFT JOIN messages m ON m.folder_id = f.id WHERE f.mailbox = ?
                        GROUP BY f.id ORDER BY f.system DESC, f.name""", (me["address"],))


def create_mail_folder(db: sqlite3.Connection, name: str) -> dict:
    """Create a folder in your mailbox (lower-case name, letters, digits, dashes and spaces)."""
    me = _me(db)
    clean = name.strip().lower()
    if not re.fullmatch(r"[a-z0-9][a-z0-9 -]{0,39}", clean):
        raise ValueError("folder names are 1-40 lower-case letters, digits, spaces or dashes")
    if _one(db, "SELECT 1 AS x FROM mail_folders WHERE mailbox = ? AND name = ?", (me["address"], clean)):
        raise ValueError(f"folder {clean!r} already exists")
    with _tx(db):
        db.execute("INSERT INTO mail_folders (mailbox, name, system) VALUES (?, ?, 0)", (me["address"], clean))
        _audit(db, me["address"], clean, "create_folder")
    return {"name": clean}


def search_messages(db: sqlite3.Connection, query: str = "", folder: Optional[str] = None, sender: Optional[str] = None,
                    unread_only: bool = False, flagged_only: bool = False, limit: int = 20) -> list[dict]:
    """Search your mailbox by text (subject and body), folder, sender, unread or flagged; newest first.

    Args:
        query: words to look for (empty matches everything)
        folder: a folder name: inbox, archive, trash or one you created
        sender: the sender's email address
        limit: the most results to return (1-100)
    """
    me = _me(db)
    q = f"%{query.strip().lower()}%"
    sql = ("SELECT m.id, m.thread_id, m.sender, m.subject, m.sent_at, m.is_read, m.is_flagged, f.name AS folder FROM messages m "
           "JOIN mail_folders f ON f.id = m.folder_id WHERE m.mailbox = ? AND (lower(m.subject) LIKE ? OR lower(m.body) LIKE ?)")
    args: list = [me["address"], q, q]
    if folder:
        sql, args = sql + " AND f.name = ?", args + [folder.strip().lower()]
    if sender:
        sql, args = sql + " AND m.sender = ?", args + [sender.strip().lower()]
    if unread_only:
        sql += " AND m.is_read = 0"
    if flagged_only:
        sql += " AND m.is_flagged = 1"
    return _rows(db, sql + " ORDER BY m.sent_at DESC, m.id DESC LIMIT ?", (*args, max(1, min(limit, 100))))


def read_message(db: sqlite3.Connection, message_id: str) -> dict:
    """One message in your mailbox with its recipients and body (reading does not change its read flag).

    Args:
        message_id: id of a message in your mailbox, such as MSG000123
    """
    return _message_view(db, _my_message(db, message_id))


def send_message(db: sqlite3.Connection, to: list[str], subject: str, body: str, cc: Optional[list[str]] = None) -> dict:
    """Send a new email. Internal recipients must exist in the directory; external addresses are delivered outside.

    Args:
        to: recipient email addresses
        cc: copy recipient email addresses
    """
    me = _me(db)
    to_ = _addresses(db, to, "to")
    if not to_:
        raise ValueError("to: at least one recipient is required")
    cc_ = [a for a in _addresses(db, cc or [], "cc") if a not in to_]
    if not subject.strip() or not body.strip():
        raise ValueError("subject and body are required")
    with _tx(db):
        mid = _deliver(db, me["address"], to_, cc_, subject.strip(), body.strip(), None, None)
    return _message_view(db, _one(db, "SELECT * FROM messages WHERE id = ?", (mid,)))


def reply_to_message(db: sqlite3.Connection, message_id: str, body: str, reply_all: bool = False) -> dict:
    """Reply to a message in your mailbox (to its sender; with reply_all also to its other recipients).

    Args:
        message_id: id of a message in your mailbox, such as MSG000123
    """
    me = _me(db)
    msg = _my_message(db, message_id)
    if not body.strip():
        raise ValueError("body is required")
    view = _message_view(db, msg)
    to = [msg["sender"]] if msg["sender"] != me["address"] else view["to"]
    cc = [a for a in view["to"] + view["cc"] if a not in to and a != me["address"]] if reply_all else []
    subject = msg["subject"] if msg["subject"].lower().startswith("re:") else f"Re: {msg['subject']}"
    with _tx(db):
        mid = _deliver(db, me["address"], to, cc, subject, body.strip(), msg["thread_id"], msg["id"])
    return _message_view(db, _one(db, "SELECT * FROM messages WHERE id = ?", (mid,)))


def forward_message(db: sqlite3.Connection, message_id: str, to: list[str], note: str = "") -> dict:
    """Forward a message in your mailbox to new recipients, with an optional note above the original.

    Args:
        message_id: id of a message in your mailbox, such as MSG000123
        to: recipient email addresses
    """
    me = _me(db)
    msg = _my_message(db, message_id)
    to_ = _addresses(db, to, "to")
    if not to_:
        raise ValueError("to: at least one recipient is required")
    body = (note.strip() + "\n\n" if note.strip() else "") + f"---------- Forwarded message ----------\nFrom: {msg['sender']}\nSubject: {msg['subject']}\n\n{msg['body']}"
    subject = msg["subject"] if msg["subject"].lower().startswith("fwd:") else f"Fwd: {msg['subject']}"
    with _tx(db):
        mid = _deliver(db, me["address"], to_, [], subject, body, None, None)
    return _message_view(db, _one(db, "SELECT * FROM messages WHERE id = ?", (mid,)))


def move_message(db: sqlite3.Connection, message_id: str, folder: str) -> dict:
    """Move a message of yours to another of your folders (inbox, archive, trash or one you created).

    Args:
        message_id: id of a message in your mailbox, such as MSG000123
        folder: a folder name: inbox, archive, trash or one you created
    """
    me = _me(db)
    msg = _my_message(db, message_id)
    target = _folder(db, me["address"], folder)
    if target["name"] == "sent" or msg["folder_id"] == _folder(db, me["address"], "sent")["id"]:
        raise ValueError("messages cannot be moved into or out of sent")
    with _tx(db):
        db.execute("UPDATE messages SET folder_id = ? WHERE id = ?", (target["id"], message_id))
        _audit(db, me["address"], message_id, "move", target["name"])
    return _message_view(db, _my_message(db, message_id))


def flag_message(db: sqlite3.Connection, message_id: str, flagged: bool = True) -> dict:
    """Flag (or unflag) a message of yours for follow-up.

    Args:
        message_id: id of a message in your mailbox, such as MSG000123
    """
    me = _me(db)
    _my_message(db, message_id)
    with _tx(db):
        db.execute("UPDATE messages SET is_flagged = ? WHERE id = ?", (int(flagged), message_id))
        _audit(db, me["address"], message_id, "flag", str(int(flagged)))
    return _message_view(db, _my_message(db, message_id))


def mark_message_read(db: sqlite3.Connection, message_id: str, is_read: bool = True) -> dict:
    """Mark a message of yours as read (or unread).

    Args:
        message_id: id of a message in your mailbox, such as MSG000123
    """
    me = _me(db)
    _my_message(db, message_id)
    with _tx(db):
        db.execute("UPDATE messages SET is_read = ? WHERE id = ?", (int(is_read), message_id))
        _audit(db, me["address"], message_id, "read", str(int(is_read)))
    return _message_view(db, _my_message(db, message_id))


# -- calendar --------------------------------------------------------------------------------------

def _event(db, event_id: str) -> dict:
    ev = _one(db, "SELECT * FROM events WHERE id = ?", (event_id,))
    if ev is None:
        raise ValueError(f"no event {event_id}")
    return ev


def _event_view(db, ev: dict) -> dict:
    att = _rows(db, "SELECT address, response FROM event_attendees WHERE event_id = ? ORDER BY address", (ev["id"],))
    return {**ev, "attendees": att}


def _visible_event(db, event_id: str) -> dict:
    me = _me(db)
    ev = _event(db, event_id)
    if ev["organizer"] != me["address"] and not _one(db, "SELECT 1 AS x FROM event_attendees WHERE event_id = ? AND address = ?",
                                                     (event_id, me["address"])):
        raise PermissionError(f"{event_id} is not on your calendar; use get_free_busy for other people's time")
    return ev


def _organized(db, event_id: str) -> tuple[dict, dict]:
    me = _me(db)
    ev = _event(db, event_id)
    if ev["organizer"] != me["address"]:
        raise PermissionError(f"only the organizer ({ev['organizer']}) may change {event_id}")
    if ev["status"] == "cancelled":
        raise ValueError(f"{event_id} is cancelled; cancelled events cannot be changed")
    return me, ev


def _busy(db, address: str, start: str, end: str, skip: Optional[str] = None) -> list[dict]:
    return _rows(db, """SELECT DISTINCT e.id, e.starts_at, e.ends_at FROM events e LEFT JOIN event_attendees a ON a.event_id = e.id
                        WHERE e.status = 'confirmed' AND e.starts_at < ? AND e.ends_at > ? AND e.id != ?
                        AND (e.organizer = ? OR (a.address = ? AND a.response != 'declined')) ORDER BY e.starts_at""",
                 (end, start, skip or "", address, address))


def _check_slot(db, start: str, end: str, room_id: Optional[str], people: int, skip: Optional[str] = None) -> None:
    s, e = _time(start, "starts_at"), _time(end, "ends_at")
    if e <= s:
        raise ValueError("ends_at must be after starts_at")
    if start < _now(db):
        raise ValueError(f"starts_at {start} is in the past (now is {_now(db)})")
    if room_id:
        room = _one(db, "SELECT * FROM rooms WHERE id = ?", (room_id,))
        if room is None:
            raise ValueError(f"no room {room_id} (see find_available_rooms)")
        if room["capacity"] < people:
            raise ValueError(f"{room['name']} seats {room['capacity']}, the meeting has {people} people")
        clash = _one(db, "SELECT id FROM events WHERE room_id = ? AND status = 'confirmed' AND starts_at < ? AND ends_at > ? AND id != ?",
                     (room_id, end, start, skip or ""))
        if clash:
            raise ValueError(f"{room['name']} is already booked then ({clash['id']})")


def list_events(db: sqlite3.Connection, start: str, end: str, include_cancelled: bool = False) -> list[dict]:
    """Events on your calendar (you organize or attend) that overlap [start, end), in time order.

    Args:
        start: UTC time like 2026-03-18T00:00:00Z
        end: UTC time like 2026-03-19T00:00:00Z
    """
    me = _me(db)
    _time(start, "start")
    _time(end, "end")
    sql = ("""SELECT DISTINCT e.id, e.title, e.organizer, e.starts_at, e.ends_at, e.location, e.room_id, e.status FROM events e
              LEFT JOIN event_attendees a ON a.event_id = e.id WHERE (e.organizer = ? OR a.address = ?) AND e.starts_at < ? AND e.ends_at > ?""")
    if not include_cancelled:
        sql += " AND e.status = 'confirmed'"
    return _rows(db, sql + " ORDER BY e.starts_at, e.id", (me["address"], me["address"], end, start))


def get_event(db: sqlite3.Connection, event_id: str) -> dict:
    """One event on your calendar with its attendees and their responses.

    Args:
        event_id: event id such as EVT000123
    """
    return _event_view(db, _visible_event(db, event_id))


def create_event(db: sqlite3.Connection, title: str, starts_at: str, ends_at: str, attendees: list[str],
                 description: str = "", room_id: Optional[str] = None, location: str = "") -> dict:
    """Create a meeting on your calendar and invite internal attendees (responses start as needs_action).
    Times are UTC like 2026-03-20T14:00:00Z and must be in the future. A room must be free and big enough
    for the attendees plus you.

    Args:
        starts_at: UTC start like 2026-03-18T14:00:00Z
        ends_at: UTC end like 2026-03-18T15:00:00Z
        attendees: email addresses of internal colleagues
        room_id: room id such as RM-RTM-02 (find_available_rooms lists free ones)
    """
    me = _me(db)
    people = [a for a in _addresses(db, attendees, "attendees", internal_only=True) if a != me["address"]]
    if not title.strip():
        raise ValueError("title is required")
    _check_slot(db, starts_at, ends_at, room_id, len(people) + 1)
    cal = _one(db, "SELECT id FROM calendars WHERE owner = ?", (me["address"],))
    if location == "" and room_id:
        location = _one(db, "SELECT name FROM rooms WHERE id = ?", (room_id,))["name"]
    now = _now(db)
    with _tx(db):
        eid = _next_id(db, "events", "EVT", 6)
        db.execute("""INSERT INTO events (id, calendar_id, organizer, title, description, location, room_id, starts_at, ends_at, status,
                      created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'confirmed', ?, ?)""",
                   (eid, cal["id"], me["address"], title.strip(), description, location, room_id, starts_at, ends_at, now, now))
        db.executemany("INSERT INTO event_attendees (event_id, address, response) VALUES (?, ?, 'needs_action')", [(eid, a) for a in people])
        _audit(db, me["address"], eid, "create", f"{starts_at}/{ends_at}")
    return _event_view(db, _event(db, eid))


def update_event(db: sqlite3.Connection, event_id: str, title: Optional[str] = None, starts_at: Optional[str] = None,
                 ends_at: Optional[str] = None, description: Optional[str] = None, room_id: Optional[str] = None,
                 location: Optional[str] = None) -> dict:
    """Change an event you organize. Moving it in time resets every attendee's response to needs_action.

    Args:
        event_id: event id such as EVT000123
        starts_at: UTC start like 2026-03-18T14:00:00Z
        ends_at: UTC end like 2026-03-18T15:00:00Z
        room_id: room id such as RM-RTM-02 (find_available_rooms lists free ones)
    """
    me, ev = _organized(db, event_id)
    changes = {k: v for k, v in dict(title=title, starts_at=starts_at, ends_at=ends_at, description=description, room_id=room_id,
                                     location=location).items() if v is not None}
    start, end = changes.get("starts_at", ev["starts_at"]), changes.get("ends_at", ev["ends_at"])
    people = _one(db, "SELECT COUNT(*) AS n FROM event_attendees WHERE event_id = ?", (event_id,))["n"] + 1
    _check_slot(db, start, end, changes.get("room_id", ev["room_id"]), people, skip=event_id)
    moved = start != ev["starts_at"] or end != ev["ends_at"]
    changed = {k: v for k, v in changes.items() if ev[k] != v}
    with _tx(db):
        if changed:
            sets = ", ".join(f"{k} = ?" for k in changed)
            db.execute(f"UPDATE events SET {sets}, updated_at = ? WHERE id = ?", (*changed.values(), _now(db), event_id))
            _audit(db, me["address"], event_id, "update", ",".join(f"{k}={v}" for k, v in changed.items()))
        if moved:
            db.execute("UPDATE event_attendees SET response = 'needs_action' WHERE event_id = ?", (event_id,))
    return _event_view(db, _event(db, event_id))


def add_event_attendees(db: sqlite3.Connection, event_id: str, attendees: list[str]) -> dict:
    """Invite more internal people to an event you organize.

    Args:
        event_id: event id such as EVT000123
        attendees: email addresses of internal colleagues
    """
    me, ev = _organized(db, event_id)
    new = [a for a in _addresses(db, attendees, "attendees", internal_only=True) if a != me["address"]]
    have = {r["address"] for r in _rows(db, "SELECT address FROM event_attendees WHERE event_id = ?", (event_id,))}
    new = [a for a in new if a not in have]
    if not new:
        raise ValueError("everyone listed is already invited")
    if ev["room_id"]:
        _check_slot(db, ev["starts_at"], ev["ends_at"], ev["room_id"], len(have) + len(new) + 1, skip=event_id)
    with _tx(db):
        db.executemany("INSERT INTO event_attendees (event_id, address, response) VALUES (?, ?, 'needs_action')", [(event_id, a) for a in new])
        db.execute("UPDATE events SET updated_at = ? WHERE id = ?", (_now(db), event_id))
        _audit(db, me["address"], event_id, "invite", ",".join(new))
    return _event_view(db, _event(db, event_id))


def remove_event_attendee(db: sqlite3.Connection, event_id: str, address: str) -> dict:
    """Remove one attendee from an event you organize.

    Args:
        event_id: event id such as EVT000123
        address: an attendee's email address
    """
    me, _ev = _organized(db, event_id)
    address = address.strip().lower()
    if not _one(db, "SELECT 1 AS x FROM event_attendees WHERE event_id = ? AND address = ?", (event_id, address)):
        raise ValueError(f"{address} is not invited to {event_id}")
    with _tx(db):
        db.execute("DELETE FROM event_attendees WHERE event_id = ? AND address = ?", (event_id, address))
        db.execute("UPDATE events SET updated_at = ? WHERE id = ?", (_now(db), event_id))
        _audit(db, me["address"], event_id, "uninvite", address)
    return _event_view(db, _event(db, event_id))


def cancel_event(db: sqlite3.Connection, event_id: str, note: str = "") -> dict:
    """Cancel an event you organize (it stays on calendars as cancelled and frees its room).

    Args:
        event_id: event id such as EVT000123
    """
    me, ev = _organized(db, event_id)
    if ev["ends_at"] <= _now(db):
        raise ValueError(f"{event_id} is already over")
    with _tx(db):
        db.execute("UPDATE events SET status = 'cancelled', updated_at = ? WHERE id = ?", (_now(db), event_id))
        _audit(db, me["address"], event_id, "cancel", note.strip())
    return _event_view(db, _event(db, event_id))


def respond_to_event(db: sqlite3.Connection, event_id: str, response: Literal["accepted", "declined", "tentative"]) -> dict:
    """Answer an invitation you received.

    Args:
        event_id: event id such as EVT000123
    """
    me = _me(db)
    ev = _visible_event(db, event_id)
    if ev["organizer"] == me["address"]:
        raise ValueError("you organize this event")
    if ev["status"] == "cancelled":
        raise ValueError(f"{event_id} is cancelled")
    with _tx(db):
        db.execute("UPDATE event_attendees SET response = ? WHERE event_id = ? AND address = ?", (response, event_id, me["address"]))
        _audit(db, me["address"], event_id, "respond", response)
    return _event_view(db, _event(db, event_id))


def get_free_busy(db: sqlite3.Connection, addresses: list[str], start: str, end: str) -> dict:
    """Busy intervals of internal people between start and end (no titles: other calendars are private).

    Args:
        addresses: email addresses of internal colleagues
        start: UTC time like 2026-03-18T00:00:00Z
        end: UTC time like 2026-03-19T00:00:00Z
    """
    _me(db)
    _time(start, "start")
    _time(end, "end")
    people = _addresses(db, addresses, "addresses", internal_only=True)
    return {a: [{"starts_at": b["starts_at"], "ends_at": b["ends_at"]} for b in _busy(db, a, start, end)] for a in people}


def find_free_slots(db: sqlite3.Connection, attendees: list[str], duration_minutes: int, window_start: str, window_end: str,
                    limit: int = 10) -> list[dict]:
    """Times when you and every attendee are free for duration_minutes, inside working hours, on the half hour, earliest first.

    Args:
        attendees: email addresses of internal colleagues
        window_start: earliest UTC start to consider, like 2026-03-18T08:00:00Z
        window_end: latest UTC end to consider, like 2026-03-18T18:00:00Z
        limit: the most slots to return (1-50)
    """
    me = _me(db)
    people = list(dict.fromkeys([me["address"], *_addresses(db, attendees, "attendees", internal_only=True)]))
    if not 15 <= duration_minutes <= 480:
        raise ValueError("duration_minutes must be 15..480")
    t = max(_time(window_start, "window_start"), _time(_now(db), "now"))
    t = t.replace(second=0)
    if t.minute % 30:  # start on the next half hour
        t += timedelta(minutes=30 - t.minute % 30)
    stop = _time(window_end, "window_end")
    dur = timedelta(minutes=duration_minutes)
    busy = {p: [(_time(b["starts_at"], "x"), _time(b["ends_at"], "x")) for b in _busy(db, p, t.strftime(STAMP), window_end)] for p in people}
    out = []
    while t + dur <= stop and len(out) < max(1, min(limit, 50)):
        day_end = t.replace(hour=WORK_END, minute=0)
        if t.weekday() < 5 and t.hour >= WORK_START and t + dur <= day_end:
            if all(not (s < t + dur and e > t) for p in people for s, e in busy[p]):
                out.append({"starts_at": t.strftime(STAMP), "ends_at": (t + dur).strftime(STAMP)})
        t += timedelta(minutes=30)
    return out


def find_available_rooms(db: sqlite3.Connection, starts_at: str, ends_at: str, min_capacity: int = 1,
                         building: Optional[str] = None) -> list[dict]:
    """Meeting rooms that are free for the whole interval and seat at least min_capacity people.

    Args:
        starts_at: UTC start like 2026-03-18T14:00:00Z
        ends_at: UTC end like 2026-03-18T15:00:00Z
    """
    _me(db)
    _time(starts_at, "starts_at")
    _time(ends_at, "ends_at")
    sql = ("SELECT r.* FROM rooms r WHERE r.capacity >= ? AND NOT EXISTS (SELECT 1 FROM events e WHERE e.room_id = r.id "
           "AND e.status = 'confirmed' AND e.starts_at < ? AND e.ends_at > ?)")
    args: list = [min_capacity, ends_at, starts_at]
    if building:
        sql, args = sql + " AND r.building = ?", args + [building]
    return _rows(db, sql + " ORDER BY r.capacity, r.id", args)
