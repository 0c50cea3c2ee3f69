"""Build-time generator of the collab gym's base data (seed.sql). Not used at run time.

The directory is the itsm gym's staff directory (same people, same addresses, from the itsm
generator with the same seed), plus external contacts; mail threads and calendar events are drawn
with stdlib `random.Random(SEED)`. Run it and commit the result:

    python3 src/agentmill/tools/gyms/collab/generate.py
"""

from __future__ import annotations

import importlib.util
import random
from datetime import datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 20260317


def _itsm_generator():
    spec = importlib.util.spec_from_file_location("itsm_generate", HERE.parent / "itsm" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ITSM = _itsm_generator()
NOW = ITSM.NOW
iso, insert = ITSM.iso, ITSM.insert

EXTERNAL = [
    ("support@printfleet-services.com", "PrintFleet Support", "Vendor"),
    ("accounts@printfleet-services.com", "PrintFleet Accounts", "Vendor"),
    ("noc@northsea-telecom.net", "North Sea Telecom NOC", "Vendor"),
    ("servicedesk@erpsoft-partners.com", "ERPSoft Partner Desk", "Vendor"),
    ("renewals@erpsoft-partners.com", "ERPSoft Renewals", "Vendor"),
    ("alerts@cloudwatchtower.io", "Cloud Monitoring Alerts", "Vendor"),
    ("hello@securelayer-audit.com", "SecureLayer Audit", "Auditor"),
    ("logistics@baltic-freight.pl", "Baltic Freight Logistics", "Customer"),
    ("purchasing@alpen-retail.de", "Alpen Retail Purchasing", "Customer"),
    ("it@alpen-retail.de", "Alpen Retail IT", "Customer"),
    ("orders@lyon-distribution.fr", "Lyon Distribution Orders", "Customer"),
    ("contact@harbourside-foods.nl", "Harbourside Foods", "Customer"),
    ("recruiting@talentbridge.eu", "TalentBridge Recruiting", "Vendor"),
    ("billing@fleetgps-solutions.com", "FleetGPS Billing", "Vendor"),
    ("support@fleetgps-solutions.com", "FleetGPS Support", "Vendor"),
]
ROOMS = [
    ("RM-RTM-01", "Maas", "Rotterdam HQ", 4), ("RM-RTM-02", "Erasmus", "Rotterdam HQ", 8), ("RM-RTM-03", "Kop van Zuid", "Rotterdam HQ", 12),
    ("RM-RTM-04", "Boardroom", "Rotterdam HQ", 20), ("RM-HAM-01", "Elbe", "Hamburg Depot", 6), ("RM-HAM-02", "Alster", "Hamburg Depot", 10),
    ("RM-LYO-01", "Rhone", "Lyon Office", 6), ("RM-LYO-02", "Saone", "Lyon Office", 8), ("RM-GDN-01", "Motlawa", "Gdansk Hub", 6),
    ("RM-GDN-02", "Westerplatte", "Gdansk Hub", 14), ("RM-RTM-05", "Focus Booth", "Rotterdam HQ", 2), ("RM-HAM-03", "Speicher", "Hamburg Depot", 16),
]
MAIL_TOPICS = [
    ("Quarter-end close timeline", "Please find the close calendar attached; cut-off for invoices is Friday noon."),
    ("Laptop refresh for your team", "Your team is due for the laptop refresh. Please confirm the list of users by Wednesday."),
    ("Warehouse scanner rollout", "The new scanner firmware goes to Hamburg first. Let me know if the timing clashes with inventory."),
    ("Customer portal feedback", "Two customers reported that the invoice download is slow. Can we look at it this week?"),
    ("Team offsite agenda", "Draft agenda for the offsite is below. Comments welcome before Thursday."),
    ("Access review reminder", "The quarterly access review is open. Please certify your team's access by the end of the month."),
    ("Vendor invoice query", "We received an invoice without a purchase order number. Could you check on your side?"),
    ("Updated shipping volumes", "Volumes for next week are up 12 percent. Please plan staffing accordingly."),
    ("Phishing simulation results", "Results of last month's phishing simulation are attached. Click rate went down to 4 percent."),
    ("New starter next Monday", "A new colleague starts on Monday. Please prepare a laptop and accounts."),
    ("Printer contract renewal", "The printer maintenance contract ends next month. Do we renew for two years?"),
    ("ERP release notes", "Release notes for the next ERP update are ready. The main change is in invoice matching."),
    ("Weekly operations report", "This week's report: on-time delivery 96.4 percent, two depot delays."),
    ("Lunch and learn: data warehouse", "Join us for a short session on self-service reports in the data warehouse."),
]
MEETINGS = ["Weekly team sync", "1:1", "Project checkpoint", "Vendor review", "Sprint planning", "Budget review", "Incident review",
            "Change Advisory Board", "Customer call", "Depot operations stand-up", "Interview", "Architecture review", "Training session"]


def build() -> str:
    rng = random.Random(SEED)
    users = ITSM.people(random.Random(ITSM.SEED))  # the same directory the itsm gym has
    by_id = {u["id"]: u for u in users}
    boxes = [dict(address=u["email"], display_name=u["name"], department=u["department"], title=u["title"], is_external=0, active=u["active"])
             for u in users]
    boxes += [dict(address=a, display_name=n, department=d, title="", is_external=1, active=1) for a, n, d in EXTERNAL]
    internal = [b["address"] for b in boxes if not b["is_external"] and b["active"]]
    staff = [by_id[s[0]]["email"] for s in ITSM.STAFF if by_id[s[0]]["active"]]

    folders, folder_id = [], {}
    for b in boxes:
        if b["is_external"]:
            continue
        for name in ("inbox", "sent", "archive", "trash"):
            folders.append(dict(id=len(folders) + 1, mailbox=b["address"], name=name, system=1))
            folder_id[(b["address"], name)] = len(folders)
    for addr in staff[:20]:
        for name in rng.sample(["vendors", "projects", "reports", "cab", "receipts"], 2):
            folders.append(dict(id=len(folders) + 1, mailbox=addr, name=name, system=0))
            folder_id[(addr, name)] = len(folders)

    messages, recipients = [], []
    for t in range(1, 261):
        subject, body = rng.choice(MAIL_TOPICS)
        external_sender = rng.random() < 0.12
        sender = rng.choice(EXTERNAL)[0] if external_sender else rng.choice(staff if rng.random() < 0.5 else internal)
        pool = staff if rng.random() < 0.6 else internal
        to = rng.sample([a for a in pool if a != sender], rng.randint(1, 2))
        cc = rng.sample([a for a in internal if a != sender and a not in to], rng.randint(0, 2))
        sent = NOW - timedelta(days=rng.randint(0, 45), hours=rng.randint(0, 10), minutes=rng.randint(0, 59))
        thread = f"THR{t:05d}"
        copies = ([] if external_sender else [(sender, "sent")]) + [(a, "inbox") for a in to + cc]
        for owner, folder in copies:
            mid = f"MSG{len(messages) + 1:06d}"
            if folder == "inbox" and rng.random() < 0.15 and (owner, "archive") in folder_id:
                folder = "archive"
            messages.append(dict(id=mid, mailbox=owner, folder_id=folder_id[(owner, folder)], thread_id=thread, in_reply_to=None,
                                 sender=sender, subject=subject, body=body, sent_at=iso(sent),
                                 is_read=1 if folder != "inbox" or sent < NOW - timedelta(days=3) or rng.random() < 0.5 else 0,
                                 is_flagged=1 if folder == "inbox" and rng.random() < 0.08 else 0))
            recipients += [dict(message_id=mid, address=a, kind="to") for a in to]
            recipients += [dict(message_id=mid, address=a, kind="cc") for a in cc]

    calendars = [dict(id=f"CAL{i + 1:04d}", owner=b["address"], name=f"{b['display_name']}", timezone="UTC")
                 for i, b in enumerate(x for x in boxes if not x["is_external"])]
    cal_of = {c["owner"]: c["id"] for c in calendars}
    rooms = [dict(id=i, name=n, building=b, capacity=c) for i, n, b, c in ROOMS]
    events, attendees = [], []
    busy_rooms: list[tuple[str, str, str]] = []
    monday = NOW.replace(hour=0, minute=0) - timedelta(days=NOW.weekday() + 7)
    for e in range(1, 421):
        organizer = rng.choice(staff if rng.random() < 0.7 else internal)
        day = monday + timedelta(days=rng.choice([d for d in range(0, 33) if (monday + timedelta(days=d)).weekday() < 5]))
        start = day + timedelta(hours=rng.randint(8, 16), minutes=rng.choice([0, 30]))
        end = start + timedelta(minutes=rng.choice([30, 30, 60, 60, 90]))
        if end.hour > 18 or (end.hour == 18 and end.minute > 0):
            end = start + timedelta(minutes=30)
        title = rng.choice(MEETINGS)
        people_ = rng.sample([a for a in (staff if rng.random() < 0.6 else internal) if a != organizer], rng.randint(1, 5))
        room = None
        if rng.random() < 0.6:
            for r in rng.sample(ROOMS, len(ROOMS)):
                if r[3] > len(people_) and not any(br == r[0] and bs < iso(end) and be > iso(start) for br, bs, be in busy_rooms):
                    room = r[0]
                    busy_rooms.append((room, iso(start), iso(end)))
                    break
        eid = f"EVT{e:06d}"
        created = min(start - timedelta(days=rng.randint(1, 14)), NOW - timedelta(hours=1))
        events.append(dict(id=eid, calendar_id=cal_of[organizer], organizer=organizer, title=title, description="",
                           location=next((r[1] for r in ROOMS if r[0] == room), "Video call") if room or rng.random() < 0.7 else "",
                           room_id=room, starts_at=iso(start), ends_at=iso(end),
                           status="cancelled" if rng.random() < 0.04 else "confirmed", created_at=iso(created), updated_at=iso(created)))
        for a in people_:
            resp = rng.choices(["accepted", "needs_action", "declined", "tentative"], [6, 2, 1, 1])[0]
            attendees.append(dict(event_id=eid, address=a, response=resp))

    context = [dict(key="current_user", value=by_id["USR0003"]["email"]), dict(key="now", value=iso(NOW))]
    return "".join([f"-- Generated by generate.py (seed {SEED}). Do not edit by hand: change the generator and re-run it.\n",
                    insert("collab_context", context), insert("mailboxes", boxes), insert("mail_folders", folders),
                    insert("messages", messages), insert("message_recipients", recipients), insert("calendars", calendars),
                    insert("rooms", rooms), insert("events", events), insert("event_attendees", attendees)])


if __name__ == "__main__":
    (HERE / "seed.sql").write_text(build())
    print(f"wrote {HERE / 'seed.sql'}")
