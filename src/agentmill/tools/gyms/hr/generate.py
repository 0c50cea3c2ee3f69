"""Build-time generator of the hr gym's base data (seed.sql). Not used at run time.

The people are the itsm gym's directory (same names, addresses and departments; employee EMP0042 is
itsm user USR0042), from the itsm generator with its own seed. Positions, salaries, teams, leave,
onboarding and job changes are drawn with stdlib `random.Random(SEED)`. Run it and commit the result:

    python3 src/agentmill/tools/gyms/hr/generate.py
"""

from __future__ import annotations

import importlib.util
import random
from datetime import date, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 20260318


def _itsm_generator():
    spec = importlib.util.spec_from_file_location("itsm_generate", HERE.parent / "itsm" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ITSM = _itsm_generator()
NOW = ITSM.NOW
iso, insert = ITSM.iso, ITSM.insert
TODAY = NOW.date()

GRADES = {  # grade -> salary band (EUR a year)
    2: (32000, 42000), 3: (38000, 50000), 4: (46000, 62000), 5: (56000, 75000), 6: (68000, 90000), 7: (82000, 110000),
    8: (100000, 140000), 9: (125000, 175000),
}
LEAD_TITLES = {"Sales Manager", "Support Team Lead", "Warehouse Supervisor", "Controller", "Contracts Manager",
               "Vendor Manager", "Product Manager", "HR Business Partner", "Office Manager", "Brand Manager"}
LEAVE_TYPES = [  # code, name, default days, capped, notice days, backdate days
    ("annual", "Annual leave", 25, 1, 5, 0), ("sick", "Sick leave", 10, 1, 0, 14),
    ("compassionate", "Compassionate leave", 3, 1, 0, 7), ("unpaid", "Unpaid leave", 0, 0, 20, 0),
]
HOLIDAYS = [("2026-01-01", "New Year's Day"), ("2026-04-03", "Good Friday"), ("2026-04-06", "Easter Monday"),
            ("2026-05-01", "Labour Day"), ("2026-05-14", "Ascension Day"), ("2026-05-25", "Whit Monday"),
            ("2026-12-24", "Christmas Eve"), ("2026-12-25", "Christmas Day")]
ONBOARDING = [  # seq, title, owner role, mandatory
    (1, "Send the contract and collect the signed copy", "hr", 1), (2, "Collect tax and bank details", "hr", 1),
    (3, "Enrol in payroll", "hr", 1), (4, "Request laptop and accounts from IT", "manager", 1),
    (5, "Assign an onboarding buddy", "manager", 0), (6, "Plan the first-week schedule", "manager", 0),
    (7, "Complete the safety induction", "employee", 1), (8, "Read and sign the code of conduct", "employee", 1),
]
NEW_HIRES = [  # name, department, title, location, start date
    ("Oskar Lindgren", "Operations", "Dispatcher", "Hamburg Depot", "2026-03-16"),
    ("Maya Pillai", "Engineering", "Software Engineer", "Rotterdam HQ", "2026-03-23"),
    ("Tariq Haddad", "Sales", "Account Executive", "Lyon Office", "2026-03-30"),
    ("Ines Carvalho", "Finance", "Accountant", "Rotterdam HQ", "2026-04-01"),
    ("Lukas Brenner", "Customer Support", "Support Specialist", "Gdansk Hub", "2026-04-13"),
    ("Freya Olsen", "Procurement", "Buyer", "Hamburg Depot", "2026-04-20"),
]
REASONS = ["Family holiday", "Spring break", "Wedding", "Moving house", "Long weekend", "Visiting family", "Summer trip", ""]


def grade_of(title: str) -> int:
    if title.startswith("Senior "):
        return grade_of(title[len("Senior "):]) + 1
    if title.startswith("Head of"):
        return 9 if title == "Head of IT Operations" else 8
    if any(w in title for w in ("Manager", "Lead", "Controller", "Supervisor", "Partner")):
        return 6
    if any(w in title for w in ("Engineer", "Analyst", "Administrator", "Developer", "Executive", "Strategist", "Officer")):
        return 4
    if "Former" in title:
        return 4
    return 3


def working_days(start: date, end: date) -> int:
    hol = {d for d, _ in HOLIDAYS}
    return sum(1 for i in range((end - start).days + 1)
               if (d := start + timedelta(days=i)).weekday() < 5 and d.isoformat() not in hol)


def build() -> str:
    users = ITSM.people(random.Random(ITSM.SEED))  # the same directory the itsm gym has
    rng = random.Random(SEED)
    dept_names = ["IT"] + list(ITSM.DEPARTMENTS)
    depts = {name: f"DEP{i + 1:02d}" for i, name in enumerate(dept_names)}
    heads = {u["department"]: u["id"] for u in users if u["manager_id"] is None}

    positions: dict[tuple[str, str], dict] = {}

    def position(dept: str, title: str) -> dict:
        key = (dept, title)
        if key not in positions:
            g = grade_of(title)
            positions[key] = dict(id=f"POS{len(positions) + 1:03d}", title=title, department_id=depts[dept], grade=g,
                                  min_salary=GRADES[g][0], max_salary=GRADES[g][1], headcount=0)
        return positions[key]

    for dept in dept_names:  # every title of every department exists, filled or not
        for title in (ITSM.DEPARTMENTS.get(dept) or []):
            position(dept, title)
            position(dept, "Senior " + title) if grade_of(title) in (3, 4) else None

    emps = []
    for u in users:
        pos = position(u["department"], u["title"])
        pos["headcount"] += 1
        eid = "EMP" + u["id"][3:]
        lo, hi = GRADES[pos["grade"]]
        hired = date(2012, 1, 9) + timedelta(days=rng.randrange(0, (date(2025, 12, 1) - date(2012, 1, 9)).days))
        term = None
        if not u["active"]:
            term = (TODAY - timedelta(days=rng.randrange(20, 200))).isoformat()
        emps.append(dict(id=eid, name=u["name"], email=u["email"], department_id=depts[u["department"]], position_id=pos["id"],
                         manager_id=None if u["manager_id"] is None else "EMP" + u["manager_id"][3:],
                         role="hr" if u["department"] == "Human Resources" else "employee",
                         status="terminated" if term else "active", location=u["location"],
                         salary=rng.randrange(lo, hi, 500), hire_date=hired.isoformat(), termination_date=term,
                         created_at=iso(NOW - timedelta(days=400)), updated_at=iso(NOW - timedelta(days=rng.randrange(5, 300)))))
    by_id = {e["id"]: e for e in emps}
    # Small teams: in each department the first active holders of a lead title manage up to five colleagues.
    for dept in dept_names[1:]:
        members = [e for e in emps if e["department_id"] == depts[dept] and e["manager_id"] and e["status"] == "active"]
        leads = [e for e in members if next(p for p in positions.values() if p["id"] == e["position_id"])["title"] in LEAD_TITLES][:2]
        rest = [e for e in members if e not in leads]
        for lead in leads:
            for e in rest[:5]:
                e["manager_id"] = lead["id"]
            rest = rest[5:]
    for e in emps:
        if e["role"] != "hr" and any(o["manager_id"] == e["id"] and o["status"] == "active" for o in emps):
            e["role"] = "manager"
    n = len(emps)
    for i, (name, dept, title, loc, start) in enumerate(NEW_HIRES):
        pos = position(dept, title)
        pos["headcount"] += 1
        first, last = name.lower().split()
        emps.append(dict(id=f"EMP{n + i + 1:04d}", name=name, email=f"{first}.{last}@{ITSM.DOMAIN}", department_id=depts[dept],
                         position_id=pos["id"], manager_id="EMP" + heads[dept][3:], role="employee", status="pre_hire",
                         location=loc, salary=GRADES[pos["grade"]][0] + 2000, hire_date=start, termination_date=None,
                         created_at=iso(NOW - timedelta(days=30 - i)), updated_at=iso(NOW - timedelta(days=20 - i))))
    for p in positions.values():  # a few open seats
        p["headcount"] += 1 if rng.random() < 0.3 else 0

    # Leave over January..June: taken (approved, past), booked (approved, future), pending, rejected, cancelled.
    requests, balances = [], {}
    active = [e for e in emps if e["status"] == "active"]
    for e in active:
        for code, _n, days, capped, _nd, _bd in LEAVE_TYPES:
            if capped:
                extra = rng.choice([0, 0, 1, 2, 3, 5]) if code == "annual" else 0
                balances[(e["id"], code)] = dict(employee_id=e["id"], leave_type=code, year=2026, entitled_days=float(days + extra),
                                                 used_days=0.0, pending_days=0.0, updated_at=iso(NOW - timedelta(days=rng.randrange(1, 60))))
    seq = 0
    for e in active:
        taken: list[tuple[date, date]] = []
        for _ in range(rng.choice([0, 1, 1, 2, 2, 3])):
            code = rng.choices(["annual", "sick", "compassionate", "unpaid"], [70, 20, 4, 6])[0]
            start = date(2026, 1, 5) + timedelta(days=rng.randrange(0, 170))
            while start.weekday() >= 5:
                start += timedelta(days=1)
            length = {"annual": rng.choice([1, 2, 3, 5, 5, 10]), "sick": rng.choice([1, 1, 2, 3]), "compassionate": 1,
                      "unpaid": rng.choice([3, 5])}[code]
            end = start + timedelta(days=length - 1)
            while end.weekday() >= 5:
                end += timedelta(days=1)
            days = working_days(start, end)
            if days == 0 or any(s <= end and start <= t for s, t in taken):
                continue
            if code == "sick" and start > TODAY:
                continue
            future = start > TODAY
            status = (rng.choices(["approved", "pending", "rejected", "cancelled"], [55, 30, 8, 7])[0] if future
                      else rng.choices(["approved", "cancelled"], [93, 7])[0])
            bal = balances.get((e["id"], code))
            if bal is not None and status in ("approved", "pending"):
                if bal["used_days"] + bal["pending_days"] + days > bal["entitled_days"]:
                    continue
                bal["used_days" if status == "approved" else "pending_days"] += days
            approver = e["manager_id"] or "EMP0052"
            if approver == e["id"]:
                approver = "EMP0056"
            seq += 1
            created = NOW - timedelta(days=rng.randrange(10, 60)) if future else \
                ITSM.datetime.combine(start, ITSM.datetime.min.time()) - timedelta(days=rng.randrange(6, 30))
            created = min(created, NOW - timedelta(days=1))
            decided = status in ("approved", "rejected")
            requests.append(dict(id=f"LR{seq:06d}", employee_id=e["id"], leave_type=code, start_date=start.isoformat(),
                                 end_date=end.isoformat(), days=float(days), reason=rng.choice(REASONS) if code == "annual" else "",
                                 status=status, requested_by=e["id"], approver_id=approver if decided else None,
                                 decided_at=iso(created + timedelta(days=1)) if decided else None,
                                 decision_note="Peak week, please pick other dates" if status == "rejected" else "",
                                 created_at=iso(created), updated_at=iso(created + timedelta(days=1) if status != "pending" else created)))
            taken.append((start, end))

    # Onboarding: completed for last year's hires that joined recently, open for the new hires.
    checklists, tasks = [], []
    hr_people = [e["id"] for e in emps if e["role"] == "hr" and e["status"] == "active"]
    recent = sorted((e for e in active if e["hire_date"] >= "2025-06-01"), key=lambda e: e["hire_date"])
    for k, e in enumerate(recent[:12] + [e for e in emps if e["status"] == "pre_hire"][:4]):
        cid = f"OB{k + 1:04d}"
        done_all = e["status"] == "active"
        owner = rng.choice(hr_people)
        created = ITSM.datetime.fromisoformat(e["hire_date"]) - timedelta(days=14)
        created = min(created, NOW - timedelta(days=6))
        progress = len(ONBOARDING) if done_all else rng.choice([0, 2, 3])
        for s, title, role, mandatory in ONBOARDING:
            done = s <= progress
            actor = owner if role == "hr" else (e["manager_id"] if role == "manager" else e["id"])
            tasks.append(dict(checklist_id=cid, seq=s, title=title, owner_role=role, mandatory=mandatory,
                              status="done" if done else "todo", done_by=actor if done else None,
                              done_at=iso(created + timedelta(days=s)) if done else None, note=""))
        checklists.append(dict(id=cid, employee_id=e["id"], owner_id=owner, start_date=e["hire_date"],
                               status="completed" if done_all else "open",
                               completed_at=iso(created + timedelta(days=10)) if done_all else None,
                               created_at=iso(created), updated_at=iso(created + timedelta(days=10 if done_all else progress))))

    # Job changes: past decided ones and a few awaiting HR.
    changes = []
    pos_by_id = {p["id"]: p for p in positions.values()}
    for k, e in enumerate(rng.sample([e for e in active if e["role"] == "employee"], 24)):
        pos = pos_by_id[e["position_id"]]
        status = ["approved", "approved", "rejected", "submitted"][k % 4]
        kind = "salary"
        new_pos = pos
        senior = positions.get((next(d for d, i in depts.items() if i == pos["department_id"]), "Senior " + pos["title"]))
        if senior and k % 3 == 0:
            kind, new_pos = "promotion", senior
        new_salary = min(new_pos["max_salary"], max(new_pos["min_salary"], e["salary"] + rng.choice([1500, 2500, 4000])))
        requester = e["manager_id"] or rng.choice(hr_people)
        decided = status in ("approved", "rejected")
        decider = rng.choice([h for h in hr_people if h not in (requester, e["id"])])
        created = NOW - timedelta(days=rng.randrange(3, 90))
        changes.append(dict(id=f"JC{k + 1:04d}", employee_id=e["id"], kind=kind, old_position_id=pos["id"], new_position_id=new_pos["id"],
                            old_salary=e["salary"], new_salary=new_salary, new_manager_id=None,
                            effective_date=(created.date() + timedelta(days=30)).replace(day=1).isoformat(),
                            justification="Annual review outcome" if kind == "salary" else "Took on senior scope",
                            status=status, requested_by=requester, decided_by=decider if decided else None,
                            decision_comment={"approved": "Within band, approved", "rejected": "Budget freeze this quarter"}.get(status, ""),
                            created_at=iso(created), updated_at=iso(created + timedelta(days=2) if decided else created)))
        if status == "approved":
            new_pos["headcount"] += 0
            e["position_id"], e["salary"] = new_pos["id"], new_salary

    def depth(e: dict) -> int:
        return 0 if e["manager_id"] is None else 1 + depth(by_id[e["manager_id"]])

    by_id = {e["id"]: e for e in emps}
    heads_rows = [(depts[d], "EMP" + h[3:]) for d, h in heads.items()]
    out = ["-- hr gym base data, written by generate.py (do not edit by hand).\n",
           "PRAGMA foreign_keys = ON;\n",
           f"INSERT INTO hr_context (key, value) VALUES ('current_user', 'EMP0056'), ('now', '{iso(NOW)}');\n",
           insert("departments", [dict(id=i, name=d, cost_centre=f"CC-{100 + 10 * int(i[3:])}", head_id=None)
                                  for d, i in depts.items()]),
           insert("positions", list(positions.values())),
           insert("employees", sorted(emps, key=lambda e: (depth(e), e["id"]))),  # managers before their reports
           "".join(f"UPDATE departments SET head_id = '{h}' WHERE id = '{d}';\n" for d, h in heads_rows),
           insert("leave_types", [dict(code=c, name=nm, default_days=float(d), capped=cp, notice_days=nd, backdate_days=bd)
                                  for c, nm, d, cp, nd, bd in LEAVE_TYPES]),
           insert("leave_balances", list(balances.values())),
           insert("public_holidays", [dict(day=d, name=nm) for d, nm in HOLIDAYS]),
           insert("leave_requests", requests),
           insert("onboarding_checklists", checklists),
           insert("onboarding_tasks", tasks),
           insert("job_changes", changes)]
    return "".join(out)


if __name__ == "__main__":
    (HERE / "seed.sql").write_text(build())
    print(f"wrote {HERE / 'seed.sql'}")
