"""Build-time generator of the procurement gym's base data (seed.sql). Not used at run time.

The people are the itsm gym's directory (user USR0054 is procurement user EMP0054, as in the hr gym),
with procurement roles from their department and title; cost centres are the hr gym's departments.
Vendors and the catalogue are fixed lists written for this gym; requisitions, orders and receipts are
drawn with stdlib `random.Random(SEED)`. Run it and commit the result:

    python3 src/agentmill/tools/gyms/procurement/generate.py
"""

from __future__ import annotations

import importlib.util
import random
from datetime import timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 20260319


def _itsm_generator():
    spec = importlib.util.spec_from_file_location("itsm_generate", HERE.parent / "itsm" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ITSM = _itsm_generator()
NOW = ITSM.NOW
iso, insert = ITSM.iso, ITSM.insert

VENDORS = [  # name, category, country, terms, status, reason
    ("Nordlicht IT Distribution", "it_hardware", "DE", 30, "active", ""), ("Benelux Office Supplies", "office", "NL", 30, "active", ""),
    ("ERPSoft Partners", "software", "DE", 45, "active", ""), ("PrintFleet Services", "services", "NL", 30, "active", ""),
    ("Baltic Pallet & Packaging", "logistics", "PL", 30, "active", ""), ("Rhone Facility Care", "facilities", "FR", 30, "active", ""),
    ("CloudWatchtower", "software", "IE", 30, "active", ""), ("FleetGPS Solutions", "logistics", "DE", 45, "active", ""),
    ("Maasvlakte Forklift Rental", "logistics", "NL", 14, "active", ""), ("SecureLayer Audit", "services", "GB", 60, "active", ""),
    ("Hanse Workwear", "facilities", "DE", 30, "active", ""), ("Vistula Signage", "marketing", "PL", 30, "active", ""),
    ("Lyon Events & Print", "marketing", "FR", 30, "active", ""), ("TalentBridge Recruiting", "services", "NL", 30, "active", ""),
    ("Datenwerk Storage", "it_hardware", "DE", 30, "active", ""), ("Kontor Furniture", "office", "DE", 45, "active", ""),
    ("North Sea Telecom", "services", "NL", 30, "active", ""), ("Gdansk Cleaning Co", "facilities", "PL", 14, "active", ""),
    ("PixelPerfect Agency", "marketing", "NL", 30, "on_hold", "Bank details under verification"),
    ("QuickParts Express", "it_hardware", "GB", 14, "blocked", "Failed the 2025 supplier compliance audit"),
    ("Alpine Coffee Service", "office", "AT", 30, "active", ""), ("Rotterdam Electrical", "facilities", "NL", 30, "on_hold", "Insurance certificate expired"),
]
CATALOGUE = {
    "it_hardware": [("Laptop 14in, 32 GB", 1450.0), ("Docking station", 210.0), ("27in monitor", 289.0), ("Rugged handheld scanner", 980.0),
                    ("Network switch 48-port", 2350.0), ("NAS 8-bay", 3900.0)],
    "software": [("Subscription seat, yearly", 420.0), ("Support renewal, yearly", 8500.0), ("Module licence", 2600.0)],
    "office": [("Printer paper A4, box of 5 reams", 24.5), ("Ergonomic chair", 540.0), ("Standing desk", 720.0), ("Coffee beans, 6 kg", 96.0)],
    "facilities": [("Safety boots", 89.0), ("Hi-vis jacket", 32.0), ("Monthly cleaning service", 3100.0), ("LED panel", 64.0)],
    "logistics": [("Euro pallets, 100", 1150.0), ("Stretch film, 24 rolls", 310.0), ("Forklift rental, one week", 690.0),
                  ("GPS tracker", 145.0)],
    "services": [("Consulting day", 1150.0), ("Printer maintenance visit", 260.0), ("Penetration test", 14500.0), ("Recruiting fee", 9000.0)],
    "marketing": [("Trade fair booth graphics", 2400.0), ("Roll-up banner", 145.0), ("Brochure print run, 2,000", 1800.0)],
}
BUDGETS = {"IT": 420000, "Finance": 60000, "Human Resources": 90000, "Sales": 150000, "Marketing": 180000, "Operations": 320000,
           "Customer Support": 70000, "Legal": 80000, "Procurement": 50000, "Engineering": 210000, "Facilities": 260000}
BUYER_TITLES = {"Buyer", "Procurement Analyst", "Vendor Manager"}


def build() -> str:
    users = ITSM.people(random.Random(ITSM.SEED))  # the same directory the itsm gym has
    rng = random.Random(SEED)
    depts = ["IT"] + list(ITSM.DEPARTMENTS)
    cc_of = {d: f"CC-{110 + 10 * i}" for i, d in enumerate(depts)}
    heads = {u["department"]: "EMP" + u["id"][3:] for u in users if u["manager_id"] is None}
    pusers = []
    for u in users:
        role, limit = "requester", 0
        if u["title"] == "Head of Finance":
            role, limit = "finance", 250000
        elif u["title"] == "Controller":
            role, limit = "finance", 50000
        elif u["title"] == "Head of Procurement":
            role, limit = "approver", 100000
        elif u["manager_id"] is None:
            role, limit = "approver", 25000
        elif u["title"] in BUYER_TITLES:
            role = "buyer"
        pusers.append(dict(id="EMP" + u["id"][3:], name=u["name"], email=u["email"], cost_centre_id=cc_of[u["department"]], role=role,
                           approval_limit=limit, active=u["active"]))
    by_id = {p["id"]: p for p in pusers}
    cfo = next(p["id"] for p in pusers if p["role"] == "finance" and p["approval_limit"] == 250000)
    buyers = [p["id"] for p in pusers if p["role"] == "buyer" and p["active"]]
    vendors = [dict(id=f"VEN{i + 1:03d}", name=n, category=c, country=co, contact_email=f"orders@{n.lower().split()[0]}.example",
                    payment_terms_days=t, status=s, status_reason=r, updated_at=iso(NOW - timedelta(days=10 + 7 * i)))
               for i, (n, c, co, t, s, r) in enumerate(VENDORS)]
    active_vendors = [v for v in vendors if v["status"] == "active"]
    budgets = {cc_of[d]: dict(cost_centre_id=cc_of[d], year=2026, amount=float(BUDGETS[d]), committed=0.0, spent=0.0,
                              updated_at=iso(NOW - timedelta(days=3))) for d in depts}

    reqs, rlines, pos, plines, receipts = [], [], [], [], []
    requesters = [p for p in pusers if p["active"]]
    for k in range(140):
        who = rng.choice(requesters)
        v = rng.choice(active_vendors)
        items = rng.sample(CATALOGUE[v["category"]], rng.choice([1, 1, 2, 3]) if len(CATALOGUE[v["category"]]) >= 3 else 1)
        lines = [(desc, rng.choice([1, 1, 2, 3, 5, 10]) if price < 5000 else 1, price) for desc, price in items]
        total = round(sum(q * p for _, q, p in lines), 2)
        rid = f"PR{k + 1:05d}"
        created = NOW - timedelta(days=rng.randrange(2, 70), hours=rng.randrange(0, 8))
        status = rng.choices(["ordered", "approved", "submitted", "draft", "rejected", "cancelled"], [50, 8, 14, 8, 10, 10])[0]
        b = budgets[who["cost_centre_id"]]
        owner = heads[next(d for d, c in cc_of.items() if c == who["cost_centre_id"])]
        approver = owner if owner != who["id"] and total <= by_id[owner]["approval_limit"] else cfo
        if approver == who["id"]:
            status = "submitted"
        if status in ("ordered", "approved", "submitted") and b["committed"] + b["spent"] + total > b["amount"] * 0.8:
            status = "rejected"
        decided = status in ("ordered", "approved", "rejected")
        reqs.append(dict(id=rid, title=f"{items[0][0]} for {by_id[who['id']]['name'].split()[0]}'s team" if len(items) == 1 else f"{v['name']} order",
                         requester_id=who["id"], cost_centre_id=who["cost_centre_id"], vendor_id=v["id"],
                         justification=rng.choice(["Replacement of worn-out equipment", "New starter", "Planned for Q2", "Contract renewal",
                                                   "Peak season capacity", "Customer project"]),
                         needed_by=(created + timedelta(days=rng.randrange(14, 60))).date().isoformat(), status=status, total=total,
                         approver_id=approver if decided else None, decided_at=iso(created + timedelta(days=1)) if decided else None,
                         decision_note="Not in this quarter's plan" if status == "rejected" else "",
                         created_at=iso(created), updated_at=iso(created + timedelta(days=2 if status == "ordered" else 1) if status != "draft" else created)))
        for n, (desc, q, p) in enumerate(lines, 1):
            rlines.append(dict(requisition_id=rid, line_no=n, description=desc, quantity=q, unit_price=p))
        if status == "approved":
            b["committed"] += total
        if status == "ordered":
            pid = f"PO{len(pos) + 1:06d}"
            issued = created + timedelta(days=2)
            pstate = rng.choices(["issued", "partially_received", "received", "closed"], [35, 15, 20, 30])[0] if issued < NOW - timedelta(days=3) else "issued"
            spent = 0.0
            for n, (desc, q, p) in enumerate(lines, 1):
                got = {"issued": 0, "received": q, "closed": q}.get(pstate, q // 2 if n == 1 else 0)
                if pstate == "partially_received" and n == 1 and got == 0:
                    got = max(0, q - 1) if q > 1 else 0
                plines.append(dict(po_id=pid, line_no=n, description=desc, quantity=q, unit_price=p, received_qty=got))
                if got:
                    receipts.append(dict(id=f"GR{len(receipts) + 1:06d}", po_id=pid, line_no=n, quantity=got, received_by=who["id"],
                                         received_at=iso(issued + timedelta(days=rng.randrange(1, 3))), note=""))
                    spent += got * p
            if pstate == "partially_received" and spent == 0:
                pstate = "issued"
            pos.append(dict(id=pid, requisition_id=rid, vendor_id=v["id"], buyer_id=rng.choice(buyers), status=pstate, total=total,
                            issued_at=iso(issued), updated_at=iso(issued + timedelta(days=3) if pstate != "issued" else issued)))
            b["spent"] += round(spent, 2)
            b["committed"] += round(total - spent, 2)
    for b in budgets.values():
        b["committed"], b["spent"] = round(b["committed"], 2), round(b["spent"], 2)

    out = [f"-- Generated by generate.py (seed {SEED}). Do not edit by hand: change the generator and re-run it.\n",
           f"INSERT INTO proc_context (key, value) VALUES ('current_user', '{buyers[0]}'), ('now', '{iso(NOW)}');\n",
           insert("cost_centres", [dict(id=cc_of[d], name=d, owner_id=heads[d]) for d in depts]),
           insert("proc_users", pusers), insert("vendors", vendors), insert("budgets", list(budgets.values())),
           insert("requisitions", reqs), insert("requisition_lines", rlines), insert("purchase_orders", pos),
           insert("po_lines", plines), insert("goods_receipts", receipts)]
    return "".join(out)


if __name__ == "__main__":
    (HERE / "seed.sql").write_text(build())
    print(f"wrote {HERE / 'seed.sql'}")
