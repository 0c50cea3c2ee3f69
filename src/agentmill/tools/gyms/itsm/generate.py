"""Build-time generator of the itsm gym's base data (seed.sql). Not used at run time.

Deterministic: stdlib `random.Random(SEED)` over word lists written for this gym, so the same
script always writes the same file. Run it after changing the lists and commit the result:

    python3 src/agentmill/tools/gyms/itsm/generate.py

The fixed IT staff, groups and business services below are what the bundled tasks refer to; the
requesters, CIs, incidents, problems, changes, articles and notes around them are generated.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path

SEED = 20260316
NOW = datetime(2026, 3, 16, 9, 30)
DOMAIN = "corvid-logistics.com"
HERE = Path(__file__).resolve().parent

FIRST = """Aaliyah Aaron Abel Ada Adrian Agnes Aiden Alba Alejandro Alice Amara Amir Anders Andrea Anika Anton
Arjun Astrid Aurora Beatriz Benedikt Bianca Boris Brenda Bruno Camila Carlos Carmen Cecilia Chidi Chloe Clara
Colin Dalia Damian Dana Daniel Daria Darius Deborah Diego Dmitri Elena Elif Elijah Elsa Emeka Emil Emma Enzo
Esther Ethan Fatima Felix Fiona Florian Gabriel Gemma Georg Grace Greta Hamza Hana Hannah Hassan Helena Henrik
Hugo Ibrahim Ines Ingrid Irene Isaac Ivan Jade Jakob Jamal Jana Javier Jonas Joy Julia Julian Kai Kamala Karim
Kate Keiko Kenji Lars Laura Leila Leon Liam Lina Lucas Lucia Luis Maja Malik Marco Maria Marius Marta Mateo
Maya Mei Milan Mira Nadia Naomi Nia Nikolai Nina Noah Nora Olga Omar Oscar Pablo Paula Pedro Petra Priya Rafael
Rana Ravi Rosa Ruben Ruth Sami Sara Sebastian Selin Sofia Soren Stefan Tariq Teresa Theo Tobias Uma Valentina
Victor Vera Wei Yara Yusuf Zara Zoe""".split()
LAST = """Abara Adeyemi Albrecht Alvarez Andersen Aoki Arslan Bakker Banerjee Barros Becker Berg Bianchi Blom
Brandt Carvalho Castillo Chen Costa Dahl Delgado Demir Diaz Dubois Eriksen Evans Farah Ferreira Fischer Fong
Garcia Gill Gomez Greco Haas Hansen Hartmann Hayes Herrera Holm Hughes Ibarra Ito Jansen Jovanovic Kaplan
Karlsson Keller Khan Kim Kowalski Kruger Lang Larsen Lehmann Lindqvist Lopez Lund Malik Marin Meyer Molina
Moreau Murphy Nakamura Navarro Nguyen Novak Okafor Olsen Ortiz Park Patel Pereira Petrov Quinn Ramos Reyes Rossi
Sato Schmidt Schulz Silva Sokolova Suarez Tanaka Torres Vargas Varga Vogel Walsh Weber Wolff Yilmaz Young Zhang
Zimmermann""".split()
DEPARTMENTS = {
    "Finance": ["Accountant", "Financial Analyst", "Accounts Payable Clerk", "Controller", "Payroll Specialist"],
    "Human Resources": ["HR Generalist", "Recruiter", "HR Business Partner", "Benefits Coordinator"],
    "Sales": ["Account Executive", "Sales Manager", "Sales Operations Analyst", "Inside Sales Representative"],
    "Marketing": ["Marketing Specialist", "Content Strategist", "Brand Manager", "Digital Campaign Lead"],
    "Operations": ["Warehouse Supervisor", "Dispatcher", "Fleet Coordinator", "Operations Analyst", "Logistics Planner"],
    "Customer Support": ["Support Specialist", "Customer Success Manager", "Support Team Lead"],
    "Legal": ["Paralegal", "Contracts Manager", "Compliance Officer"],
    "Procurement": ["Buyer", "Procurement Analyst", "Vendor Manager"],
    "Engineering": ["Software Engineer", "QA Engineer", "Product Manager", "Data Engineer"],
    "Facilities": ["Facilities Coordinator", "Office Manager"],
}
LOCATIONS = ["Rotterdam HQ", "Hamburg Depot", "Lyon Office", "Gdansk Hub", "Remote"]

GROUPS = [  # id, name, description
    ("GRP001", "Service Desk", "First-line support: triage, password resets, how-to questions"),
    ("GRP002", "Network Operations", "LAN, WAN, VPN, firewalls, wireless and DNS"),
    ("GRP003", "Database Administration", "PostgreSQL, SQL Server and Oracle databases"),
    ("GRP004", "Windows Server Team", "Windows servers, Active Directory servers, file and print"),
    ("GRP005", "Linux Platform", "Linux servers, containers and the batch scheduler"),
    ("GRP006", "Identity and Access Management", "Accounts, single sign-on, MFA and access requests"),
    ("GRP007", "End User Computing", "Laptops, desktops, printers, mobile devices and Office"),
    ("GRP008", "ERP Application Support", "The ERP suite: finance, procurement and warehouse modules"),
    ("GRP009", "CRM Application Support", "The CRM and the customer portal"),
    ("GRP010", "Security Operations", "Security monitoring, phishing, malware and vulnerabilities"),
    ("GRP011", "Cloud Infrastructure", "Cloud accounts, storage, backups and the integration platform"),
    ("GRP012", "Change Advisory Board", "Reviews and approves normal changes"),
]

# The fixed IT staff: (id, name, title, role, groups). Tasks name these people.
STAFF = [
    ("USR0001", "Helena Varga", "Head of IT Operations", "admin", ["GRP012"]),
    ("USR0002", "Marcus Lindqvist", "Service Desk Manager", "manager", ["GRP001", "GRP012"]),
    ("USR0003", "Priya Raman", "Service Desk Analyst", "agent", ["GRP001"]),
    ("USR0004", "Tomasz Nowicki", "Service Desk Analyst", "agent", ["GRP001"]),
    ("USR0005", "Grace Okafor", "Service Desk Analyst", "agent", ["GRP001", "GRP007"]),
    ("USR0006", "Jonas Albrecht", "Service Desk Analyst", "agent", ["GRP001"]),
    ("USR0007", "Sofia Marin", "Network Operations Manager", "manager", ["GRP002", "GRP012"]),
    ("USR0008", "Kenji Aoki", "Network Engineer", "agent", ["GRP002"]),
    ("USR0009", "Leila Farah", "Network Engineer", "agent", ["GRP002"]),
    ("USR0010", "Diego Herrera", "Network Engineer", "agent", ["GRP002", "GRP010"]),
    ("USR0011", "Anika Brandt", "Database Team Lead", "manager", ["GRP003", "GRP012"]),
    ("USR0012", "Ravi Banerjee", "Database Administrator", "agent", ["GRP003"]),
    ("USR0013", "Clara Dubois", "Database Administrator", "agent", ["GRP003"]),
    ("USR0014", "Henrik Dahl", "Windows Server Lead", "manager", ["GRP004"]),
    ("USR0015", "Amara Adeyemi", "Systems Administrator", "agent", ["GRP004"]),
    ("USR0016", "Lucas Pereira", "Systems Administrator", "agent", ["GRP004", "GRP006"]),
    ("USR0017", "Ingrid Holm", "Linux Platform Lead", "manager", ["GRP005", "GRP012"]),
    ("USR0018", "Omar Suarez", "Linux Engineer", "agent", ["GRP005"]),
    ("USR0019", "Mei Zhang", "Linux Engineer", "agent", ["GRP005", "GRP011"]),
    ("USR0020", "Stefan Keller", "IAM Lead", "manager", ["GRP006"]),
    ("USR0021", "Nadia Khan", "IAM Engineer", "agent", ["GRP006"]),
    ("USR0022", "Felix Wolff", "IAM Engineer", "agent", ["GRP006"]),
    ("USR0023", "Rosa Castillo", "End User Computing Lead", "manager", ["GRP007"]),
    ("USR0024", "Isaac Murphy", "Desktop Support Technician", "agent", ["GRP007"]),
    ("USR0025", "Yara Demir", "Desktop Support Technician", "agent", ["GRP007"]),
    ("USR0026", "Tobias Weber", "ERP Support Lead", "manager", ["GRP008", "GRP012"]),
    ("USR0027", "Lina Costa", "ERP Functional Analyst", "agent", ["GRP008"]),
    ("USR0028", "Emeka Okonkwo", "ERP Developer", "agent", ["GRP008"]),
    ("USR0029", "Julia Rossi", "CRM Support Lead", "manager", ["GRP009"]),
    ("USR0030", "Hamza Malik", "CRM Administrator", "agent", ["GRP009"]),
    ("USR0031", "Chloe Evans", "CRM Administrator", "agent", ["GRP009"]),
    ("USR0032", "Nikolai Petrov", "Security Operations Manager", "manager", ["GRP010", "GRP012"]),
    ("USR0033", "Aurora Silva", "Security Analyst", "agent", ["GRP010"]),
    ("USR0034", "Wei Nakamura", "Security Analyst", "agent", ["GRP010"]),
    ("USR0035", "Dana Quinn", "Cloud Infrastructure Lead", "manager", ["GRP011"]),
    ("USR0036", "Mateo Navarro", "Cloud Engineer", "agent", ["GRP011"]),
    ("USR0037", "Esther Kowalski", "Cloud Engineer", "agent", ["GRP011", "GRP005"]),
    ("USR0038", "Victor Lang", "Former Network Engineer", "agent", ["GRP002"]),  # inactive
    ("USR0039", "Bianca Greco", "Service Desk Analyst", "agent", ["GRP001"]),
    ("USR0040", "Samuel Ortiz", "IT Asset Coordinator", "agent", ["GRP007"]),
]
INACTIVE_STAFF = {"USR0038"}

SERVICES = [  # business services and the applications behind them: (service, application, group, db engine)
    ("Order Management", "ERP Order-to-Cash", "GRP008", "oracle"),
    ("Finance and Accounting", "ERP Financials", "GRP008", "oracle"),
    ("Warehouse Management", "WMS Scanner Platform", "GRP008", "postgres"),
    ("Customer Relationship Management", "CRM Sales Cloud", "GRP009", "postgres"),
    ("Customer Portal", "Customer Self-Service Portal", "GRP009", "postgres"),
    ("Email and Collaboration", "Mail and Calendar", "GRP004", "mssql"),
    ("Remote Access", "VPN Concentrator Cluster", "GRP002", None),
    ("Identity Services", "Single Sign-On", "GRP006", "postgres"),
    ("Payroll", "Payroll Engine", "GRP008", "mssql"),
    ("Fleet Tracking", "Fleet Telematics Hub", "GRP011", "postgres"),
    ("Data Warehouse", "Analytics Warehouse", "GRP011", "postgres"),
    ("File and Print", "Print Services", "GRP004", None),
]

INCIDENT_TEMPLATES = {  # category -> (short description, description, ci kind, group)
    "network": [
        ("VPN disconnects every few minutes", "The VPN client drops the tunnel roughly every five minutes while working from home.", "service:Remote Access", "GRP002"),
        ("Wi-Fi unavailable on floor {floor}", "Nobody on floor {floor} can join the corporate wireless network since this morning.", "network", "GRP002"),
        ("Slow network access to {app}", "Pages in {app} take over 30 seconds to load from the {site}.", "app", "GRP002"),
        ("Cannot reach shared drive from {site}", "Mapped drives time out from the {site}; other sites are fine.", "network", "GRP002"),
    ],
    "software": [
        ("{app} shows an error when saving", "Saving a record in {app} fails with 'unexpected server error'.", "app", None),
        ("{app} crashes on start-up", "The desktop client of {app} closes right after the splash screen.", "app", None),
        ("Report in {app} returns no data", "The monthly report in {app} is empty although data exists for the period.", "app", None),
        ("Excel add-in missing after update", "The reporting add-in disappeared from Excel after last night's update.", "workstation", "GRP007"),
    ],
    "hardware": [
        ("Laptop does not power on", "The laptop shows no lights and does not start, even on the charger.", "workstation", "GRP007"),
        ("Docking station not detecting monitors", "External monitors stay black when the laptop is docked.", "workstation", "GRP007"),
        ("Printer on floor {floor} jams constantly", "The shared printer jams on every second page.", "printer", "GRP007"),
        ("Barcode scanners in {site} not syncing", "Handheld scanners cannot upload picks to the warehouse system.", "service:Warehouse Management", "GRP008"),
    ],
    "access": [
        ("Account locked out", "I am locked out after changing my password and cannot log in.", None, "GRP006"),
        ("Need access to {app}", "I have started a new role and need access to {app}.", "app", "GRP006"),
        ("MFA prompt never arrives", "The authenticator push notification never arrives, so I cannot sign in.", "service:Identity Services", "GRP006"),
        ("Shared mailbox access missing", "I can no longer open the team's shared mailbox.", "service:Email and Collaboration", "GRP006"),
    ],
    "email": [
        ("Outlook not syncing", "New mail has not arrived in Outlook since yesterday afternoon; webmail works.", "service:Email and Collaboration", "GRP004"),
        ("Emails to a customer bounce", "Messages to one customer's domain bounce with a policy error.", "service:Email and Collaboration", "GRP004"),
        ("Calendar invites not updating", "Meeting updates do not appear on attendees' calendars.", "service:Email and Collaboration", "GRP004"),
    ],
    "database": [
        ("{db} running out of disk space", "Monitoring reports the data volume of {db} above 90 percent.", "db", "GRP003"),
        ("Slow queries on {db}", "Reports querying {db} take several minutes instead of seconds.", "db", "GRP003"),
        ("Replication lag on {db}", "The standby of {db} is more than 20 minutes behind the primary.", "db", "GRP003"),
    ],
    "security": [
        ("Suspicious email reported", "I received an email asking me to confirm my payroll details through a link.", None, "GRP010"),
        ("Malware alert on laptop", "The endpoint agent raised a malware alert on my laptop.", "workstation", "GRP010"),
        ("Unusual login attempts on {app}", "The security dashboard shows repeated failed logins to {app} from abroad.", "app", "GRP010"),
    ],
    "other": [
        ("Request for a second monitor", "Please provide a second monitor for my desk.", None, "GRP007"),
        ("Meeting room screen not working", "The screen in the meeting room shows 'no signal' for every laptop.", None, "GRP007"),
    ],
}
PROBLEM_TEMPLATES = [
    ("Recurring VPN tunnel drops for home workers", "Remote Access"),
    ("Intermittent save errors in {app}", "app"),
    ("Disk growth on {db} outpaces capacity plan", "db"),
    ("Batch job overruns delay morning reports", "app"),
    ("Printer jams on shared floor printers", "printer"),
    ("Mail sync failures after client update", "Email and Collaboration"),
    ("Scanner uploads fail during shift change", "Warehouse Management"),
    ("Memory leak in {app} application servers", "app"),
    ("Certificate expiry causes SSO outages", "Identity Services"),
    ("Replication lag on {db} under load", "db"),
]
CHANGE_TEMPLATES = [
    ("Patch {server} with monthly OS updates", "standard", "low"),
    ("Upgrade {db} to the next minor release", "normal", "moderate"),
    ("Increase data volume of {db}", "normal", "low"),
    ("Rotate TLS certificate on {app}", "standard", "low"),
    ("Replace core switch firmware on {net}", "normal", "high"),
    ("Deploy release {rel} of {app}", "normal", "moderate"),
    ("Add firewall rule for {app} integration", "normal", "moderate"),
    ("Decommission {server}", "normal", "low"),
    ("Restart {app} to apply configuration", "standard", "low"),
    ("Emergency fix for {app} outage", "emergency", "high"),
]
KB_TOPICS = [
    ("How to reset your password with self-service", "access", "public"),
    ("Connecting to the VPN from home", "network", "public"),
    ("Fixing 'no signal' on meeting room screens", "hardware", "public"),
    ("Re-adding the reporting add-in to Excel", "software", "public"),
    ("Recognising and reporting phishing email", "security", "public"),
    ("Requesting access to a shared mailbox", "access", "public"),
    ("Clearing a printer jam on floor printers", "hardware", "public"),
    ("Outlook does not sync: first steps", "email", "public"),
    ("Restarting the warehouse scanner sync service", "software", "internal"),
    ("Extending a database data volume", "database", "internal"),
    ("Failing over the VPN concentrator cluster", "network", "internal"),
    ("Unlocking an account in the directory", "access", "internal"),
    ("Rotating the SSO signing certificate", "security", "internal"),
    ("Collecting logs from the ERP application servers", "software", "internal"),
    ("Re-enrolling a phone for MFA", "access", "public"),
]
NOTE_LINES = [
    "Called the user, issue confirmed.", "Reproduced the error on a test account.", "Checked the monitoring dashboard, no alerts.",
    "Asked the user for a screenshot.", "Escalated to the owning team.", "Restarted the service, monitoring.",
    "User confirmed it works again.", "Waiting for vendor feedback.", "Collected logs and attached them to the ticket.",
    "Linked to the known error, applied the workaround.", "Remote session held with the user.", "Scheduled a desk visit for tomorrow.",
]


def iso(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def sql(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, (int, float)):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def insert(table: str, rows: list[dict]) -> str:
    if not rows:
        return ""
    cols = list(rows[0])
    out = []
    for i in range(0, len(rows), 100):  # batches keep statements readable and fast
        values = ",\n".join("(" + ", ".join(sql(r[c]) for c in cols) + ")" for r in rows[i:i + 100])
        out.append(f"INSERT INTO {table} ({', '.join(cols)}) VALUES\n{values};\n")
    return "".join(out)


PRIORITY = {("high", "high"): 1, ("high", "medium"): 2, ("medium", "high"): 2, ("high", "low"): 3, ("medium", "medium"): 3,
            ("low", "high"): 3, ("medium", "low"): 4, ("low", "medium"): 4, ("low", "low"): 5}
SLA_MINUTES = {1: (15, 240), 2: (30, 480), 3: (60, 1440), 4: (240, 4320), 5: (480, 7200)}


def email_of(name: str, taken: set[str]) -> str:
    base = name.lower().replace(" ", ".").replace("'", "")
    email, n = f"{base}@{DOMAIN}", 2
    while email in taken:
        email, n = f"{base}{n}@{DOMAIN}", n + 1
    taken.add(email)
    return email


def people(rng: random.Random) -> list[dict]:
    """The staff directory, shared with the collab gym's generator (same people, same addresses)."""
    taken: set[str] = set()
    users = []
    for uid, name, title, role, _groups in STAFF:
        users.append(dict(id=uid, name=name, email=email_of(name, taken), department="IT", title=title, role=role,
                          location=LOCATIONS[int(uid[3:]) % 4], manager_id=None if uid == "USR0001" else "USR0001",
                          active=0 if uid in INACTIVE_STAFF else 1))
    names = set(u["name"] for u in users)
    dept_heads: dict[str, str] = {}
    for n in range(len(STAFF) + 1, 301):
        while True:
            name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
            if name not in names:
                names.add(name)
                break
        dept = rng.choice(list(DEPARTMENTS))
        uid = f"USR{n:04d}"
        head = dept_heads.setdefault(dept, uid)
        users.append(dict(id=uid, name=name, email=email_of(name, taken), department=dept,
                          title=f"Head of {dept}" if head == uid else rng.choice(DEPARTMENTS[dept]), role="requester",
                          location=rng.choice(LOCATIONS), manager_id=None if head == uid else head,
                          active=0 if rng.random() < 0.04 else 1))
    return users


def build() -> str:
    rng = random.Random(SEED)
    users = people(rng)
    staff_ids = {s[0] for s in STAFF}
    requesters = [u for u in users if u["id"] not in staff_ids and u["active"]]
    members = [(g, s[0]) for s in STAFF for g in s[4]]
    group_rows = []
    for gid, name, desc in GROUPS:
        managers = [s[0] for s in STAFF if gid in s[4] and s[3] in ("manager", "admin")]
        group_rows.append(dict(id=gid, name=name, description=desc, email=name.lower().replace(" ", "-") + f"@{DOMAIN}",
                               manager_id=managers[0] if managers else None, active=1))
    group_agents = {gid: [u for g, u in members if g == gid and u not in INACTIVE_STAFF] for gid, _, _ in GROUPS}

    # --- CMDB -----------------------------------------------------------------------------------
    cis, rels = [], []

    def add_ci(name, cls, env, group, status="operational", crit=3, ip=None, os_=None, loc="Rotterdam DC"):
        cid = f"CI{len(cis) + 1:05d}"
        cis.append(dict(id=cid, name=name, ci_class=cls, environment=env, status=status, criticality=crit, owner_group_id=group,
                        location=loc, ip_address=ip, os=os_, updated_at=iso(NOW - timedelta(days=rng.randint(3, 200)))))
        return cid

    def ip():
        return f"10.{rng.randint(10, 40)}.{rng.randint(0, 254)}.{rng.randint(2, 250)}"

    apps, dbs, servers, nets, printers, workstations, services = {}, [], [], [], [], [], {}
    for i, (svc, app, group, engine) in enumerate(SERVICES):
        s = add_ci(svc, "business_service", "production", group, crit=1 if i < 5 else 2)
        a = add_ci(app, "application", "production", group, crit=1 if i < 5 else 2)
        services[svc], apps[app] = s, a
        rels.append((s, a, "depends_on"))
        slug = "".join(w[0] for w in app.lower().replace("-", " ").split())[:4]
        for env in ("production", "staging"):
            tag = "prod" if env == "production" else "stg"
            for k in range(1, (4 if env == "production" else 2) + 1):
                linux = engine != "mssql" and rng.random() < 0.75
                srv = add_ci(f"{'lnx' if linux else 'win'}-{slug}-{tag}-{k:02d}", "server", env,
                             "GRP005" if linux else "GRP004", crit=2 if env == "production" else 4, ip=ip(),
                             os_=rng.choice(["Debian 12", "RHEL 9", "Ubuntu 22.04"]) if linux else "Windows Server 2022",
                             loc=rng.choice(["Rotterdam DC", "Hamburg DC", "Cloud eu-west"]))
                servers.append(srv)
                if env == "production":
                    rels.append((a, srv, "runs_on"))
            if engine:
                d = add_ci(f"{dict(oracle='ora', postgres='pg', mssql='sql')[engine]}-{slug}-{tag}-01", "database", env, "GRP003", crit=1 if env == "production" and i < 5 else 3,
                           ip=ip(), os_={"oracle": "Oracle 19c", "postgres": "PostgreSQL 15", "mssql": "SQL Server 2019"}[engine])
                dbs.append(d)
                if env == "production":
                    rels.append((a, d, "depends_on"))
    for site, code in (("Rotterdam DC", "rtm"), ("Hamburg DC", "ham"), ("Lyon Office", "lyo"), ("Gdansk Hub", "gdn")):
        for kind, n in (("core-sw", 2), ("fw", 2), ("wlc", 1), ("edge-rtr", 1)):
            for k in range(1, n + 1):
                nets.append(add_ci(f"{kind}-{code}-{k:02d}", "network_device", "production", "GRP002", crit=2, ip=ip(), loc=site))
        for floor in range(1, 4):
            printers.append(add_ci(f"prn-{code}-f{floor}-01", "workstation", "production", "GRP007", crit=4, ip=ip(), loc=site))
    for site, code in (("Rotterdam DC", "rtm"), ("Hamburg DC", "ham")):
        for k in range(1, 4):
            add_ci(f"san-{code}-{k:02d}", "storage", "production", "GRP011", crit=2, ip=ip(), loc=site)
    rels.append((services["Remote Access"], nets[0], "connects_to"))
    for u in users[len(STAFF):len(STAFF) + 160]:
        dept = "".join(w[0] for w in u["department"].upper().split())[:3]
        workstations.append(add_ci(f"LT-{dept}-{int(u['id'][3:]):04d}", "workstation", "production", "GRP007", crit=4,
                                   os_=rng.choice(["Windows 11", "Windows 11", "macOS 14"]), loc=u["location"]))
    for cid in rng.sample(servers, 6):
        next(c for c in cis if c["id"] == cid)["status"] = rng.choice(["maintenance", "degraded"])
    for cid in rng.sample(workstations, 8):
        next(c for c in cis if c["id"] == cid)["status"] = "retired"
    ci_name = {c["id"]: c["name"] for c in cis}
    live = lambda ids: [c for c in ids if next(x for x in cis if x["id"] == c)["status"] != "retired"]  # noqa: E731

    slas = [dict(id=f"SLA-P{p}", name=f"P{p} incident resolution", priority=p, response_minutes=r, resolution_minutes=m)
            for p, (r, m) in SLA_MINUTES.items()]

    # --- problems ---------------------------------------------------------------------------------
    problems = []
    app_names = list(apps)
    for n in range(1, 81):
        tmpl, kind = PROBLEM_TEMPLATES[n % len(PROBLEM_TEMPLATES)]
        app = rng.choice(app_names)
        db = rng.choice(dbs)
        ci = {"app": apps[app], "db": db, "printer": rng.choice(printers)}.get(kind, services.get(kind))
        group = next(c for c in cis if c["id"] == ci)["owner_group_id"]
        opened = NOW - timedelta(days=rng.randint(5, 180), hours=rng.randint(0, 20))
        state = rng.choices(["new", "root_cause_analysis", "fix_in_progress", "resolved", "closed"], [2, 3, 2, 2, 4])[0]
        known = state in ("fix_in_progress", "resolved", "closed") or rng.random() < 0.2
        problems.append(dict(
            number=f"PRB{1000 + n:07d}", short_description=tmpl.format(app=app, db=ci_name[db]),
            description="Several incidents share this symptom; investigate the common cause.", state=state,
            priority=rng.choice([2, 3, 3, 4]), ci_id=ci, assignment_group_id=group,
            assigned_to=rng.choice(group_agents[group]) if state != "new" else None, known_error=int(known),
            workaround="Restart the affected client and retry the operation." if known else "",
            root_cause="Configuration drift after the last release." if state in ("resolved", "closed") else "",
            resolution_notes="Configuration corrected and monitored for a week." if state in ("resolved", "closed") else "",
            opened_by=rng.choice(group_agents[group]), opened_at=iso(opened), updated_at=iso(opened + timedelta(days=rng.randint(1, 4))),
            resolved_at=iso(opened + timedelta(days=5)) if state in ("resolved", "closed") else None,
            closed_at=iso(opened + timedelta(days=9)) if state == "closed" else None))

    # --- changes -----------------------------------------------------------------------------------
    freezes = [dict(id="FRZ001", name="Quarter-end close", starts_at="2026-03-27T00:00:00Z", ends_at="2026-04-03T23:59:59Z",
                    reason="Finance quarter-end close: no changes to production systems except emergencies"),
               dict(id="FRZ002", name="Peak shipping week", starts_at="2026-05-18T00:00:00Z", ends_at="2026-05-24T23:59:59Z",
                    reason="Peak shipping volume for the spring promotion")]
    changes = []
    for n in range(1, 161):
        tmpl, ctype, risk = CHANGE_TEMPLATES[n % len(CHANGE_TEMPLATES)]
        app = rng.choice(app_names)
        server, db, net = rng.choice(servers), rng.choice(dbs), rng.choice(nets)
        ci = {"{server}": server, "{db}": db, "{net}": net}.get(next((k for k in ("{server}", "{db}", "{net}") if k in tmpl), ""), apps[app])
        group = next(c for c in cis if c["id"] == ci)["owner_group_id"]
        created = NOW - timedelta(days=rng.randint(0, 12) if rng.random() < 0.25 else rng.randint(0, 150), hours=rng.randint(0, 8))
        if created > NOW:
            created = NOW - timedelta(hours=rng.randint(2, 30))
        past = created < NOW - timedelta(days=14)
        state = rng.choice(["closed", "closed", "closed", "canceled"]) if past else rng.choice(["new", "assess", "scheduled", "scheduled", "implement", "review"])
        start = created + timedelta(days=rng.randint(2, 12), hours=rng.choice([18, 19, 20, 21]) - created.hour)
        start = start.replace(minute=0, second=0)
        if not past and state in ("new", "assess", "scheduled"):
            while any(f["starts_at"] <= iso(start) <= f["ends_at"] for f in freezes) or start < NOW:
                start += timedelta(days=3)
        end = start + timedelta(hours=rng.choice([1, 2, 2, 3, 4]))
        if ctype == "standard":
            approval = "not_required"
            state = "scheduled" if state == "assess" else state
        elif state in ("new",):
            approval = "not_requested"
        elif state == "assess":
            approval = "requested"
        elif state == "canceled":
            approval = rng.choice(["rejected", "not_requested"])
        else:
            approval = "approved"
        requester = rng.choice(group_agents[group])
        approver = rng.choice([s[0] for s in STAFF if "GRP012" in s[4] and s[0] != requester]) if approval in ("approved", "rejected") else None
        changes.append(dict(
            number=f"CHG{3000 + n:07d}", short_description=tmpl.format(server=ci_name[server], db=ci_name[db], net=ci_name[net], app=app, rel=f"{rng.randint(3, 9)}.{rng.randint(0, 12)}"),
            description="Planned work raised by the owning team.", type=ctype, state=state, risk=risk, ci_id=ci,
            assignment_group_id=group, assigned_to=requester if state != "new" else None, requested_by=requester,
            approval=approval, approved_by=approver, planned_start=iso(start), planned_end=iso(end),
            implementation_plan="1. Announce start. 2. Apply the change. 3. Verify service health.",
            backout_plan="Restore the previous version from the pre-change snapshot.",
            close_code=rng.choice(["successful", "successful", "successful", "successful_with_issues", "unsuccessful"]) if state == "closed" else None,
            close_notes="Completed within the window; service verified." if state == "closed" else "",
            created_at=iso(created), updated_at=iso(created + timedelta(hours=rng.randint(1, 40)) if past else created)))

    # --- incidents ---------------------------------------------------------------------------------
    incidents, notes, audit = [], [], []
    cats = list(INCIDENT_TEMPLATES)
    sites = ["Rotterdam HQ", "Hamburg Depot", "Lyon Office", "Gdansk Hub"]
    for n in range(1, 421):
        cat = rng.choices(cats, [4, 5, 4, 4, 3, 2, 2, 1])[0]
        short, desc, kind, group = rng.choice(INCIDENT_TEMPLATES[cat])
        caller = rng.choice(requesters)
        app = rng.choice(app_names)
        db = rng.choice(dbs)
        fmt = dict(app=app, db=ci_name[db], floor=rng.randint(1, 3), site=rng.choice(sites))
        ci = None
        if kind == "app":
            ci = apps[app]
        elif kind == "db":
            ci = db
        elif kind == "network":
            ci = rng.choice(nets)
        elif kind == "printer":
            ci = rng.choice(printers)
        elif kind == "workstation":
            ci = rng.choice(live(workstations))
        elif kind and kind.startswith("service:"):
            ci = services[kind.split(":", 1)[1]]
        if group is None:
            group = next(c for c in cis if c["id"] == ci)["owner_group_id"]
        age = timedelta(days=rng.randint(0, 8) if rng.random() < 0.3 else rng.randint(0, 110), hours=rng.randint(0, 23), minutes=rng.randint(0, 59))
        opened = NOW - age
        impact = rng.choices(["high", "medium", "low"], [1, 3, 4])[0]
        urgency = rng.choices(["high", "medium", "low"], [1, 3, 3])[0]
        pri = PRIORITY[(impact, urgency)]
        if age > timedelta(days=20):
            state = rng.choices(["closed", "resolved", "canceled"], [12, 1, 1])[0]
        elif age > timedelta(days=5):
            state = rng.choices(["closed", "resolved", "in_progress", "on_hold"], [4, 3, 2, 1])[0]
        else:
            state = rng.choices(["new", "in_progress", "on_hold", "resolved"], [3, 4, 1, 1])[0]
        assigned = None if state == "new" and rng.random() < 0.6 else rng.choice(group_agents[group])
        resolved = state in ("resolved", "closed")
        resolved_at = opened + timedelta(hours=rng.randint(1, 96)) if resolved else None
        if resolved_at and resolved_at > NOW:
            resolved_at = NOW - timedelta(minutes=rng.randint(5, 300))
        num = f"INC{10000 + n:07d}"
        opener = rng.choice([caller["id"], rng.choice(group_agents["GRP001"])])
        incidents.append(dict(
            number=num, short_description=short.format(**fmt), description=desc.format(**fmt), category=cat,
            caller_id=caller["id"], opened_by=opener, ci_id=ci, impact=impact, urgency=urgency, priority=pri, state=state,
            on_hold_reason=rng.choice(["awaiting_caller", "awaiting_vendor"]) if state == "on_hold" else None,
            assignment_group_id=group, assigned_to=assigned, problem_id=None, sla_id=f"SLA-P{pri}",
            resolve_by=iso(opened + timedelta(minutes=SLA_MINUTES[pri][1])),
            resolution_code=rng.choice(["fixed", "fixed", "workaround", "user_error", "no_fault_found"]) if resolved else None,
            resolution_notes=rng.choice(["Restarted the service and confirmed with the user.", "Replaced the faulty part.",
                                         "Guided the user through the settings.", "Cleared the cache and re-synced."]) if resolved else "",
            reopen_count=0, opened_at=iso(opened), updated_at=iso(resolved_at or opened + timedelta(minutes=rng.randint(5, 600)) if state != "new" else opened),
            resolved_at=iso(resolved_at) if resolved_at else None,
            closed_at=iso(resolved_at + timedelta(days=3)) if state == "closed" else None))
        if incidents[-1]["updated_at"] > iso(NOW):
            incidents[-1]["updated_at"] = iso(NOW - timedelta(minutes=1))
        audit.append(dict(at=iso(opened), actor_id=opener, record=num, action="create", field="", old_value=None, new_value=None))
        for k in range(rng.randint(0, 3) if state != "new" else 0):
            notes.append(dict(record=num, author_id=assigned or rng.choice(group_agents[group]), kind="work_note",
                              body=rng.choice(NOTE_LINES), created_at=iso(min(opened + timedelta(minutes=30 * (k + 1)), NOW - timedelta(minutes=2)))))
    # tie incidents to problems with the same CI
    for p in problems:
        same = [i for i in incidents if i["ci_id"] == p["ci_id"]]
        for i in rng.sample(same, min(len(same), rng.randint(1, 4))):
            i["problem_id"] = p["number"]

    # --- knowledge ---------------------------------------------------------------------------------
    kbs = []
    for n in range(1, 121):
        title, cat, vis = KB_TOPICS[n % len(KB_TOPICS)]
        variant = n // len(KB_TOPICS)
        app = rng.choice(app_names)
        full_title = title if variant == 0 else f"{title} ({app})"
        state = rng.choices(["published", "draft", "review", "retired"], [10, 2, 2, 1])[0]
        author = rng.choice([s[0] for s in STAFF if s[0] not in INACTIVE_STAFF])
        upd = NOW - timedelta(days=rng.randint(1, 400))
        kbs.append(dict(number=f"KB{1000 + n:07d}", title=full_title,
                        body=f"Applies to: {app}.\n\nSymptoms: see title.\n\nSteps:\n1. Confirm the symptom.\n2. Follow the procedure for {cat} issues.\n3. Record the outcome on the ticket.",
                        category=cat, state=state, visibility=vis, author_id=author, ci_id=apps[app] if rng.random() < 0.5 else None,
                        view_count=rng.randint(0, 2500) if state in ("published", "retired") else 0,
                        published_at=iso(upd) if state in ("published", "retired") else None, updated_at=iso(upd)))

    context = [dict(key="current_user", value="USR0003"), dict(key="now", value=iso(NOW))]
    out = ["-- Generated by generate.py (seed %d). Do not edit by hand: change the generator and re-run it.\n" % SEED,
           insert("itsm_context", context), insert("users", users), insert("groups", group_rows),
           insert("group_members", [dict(group_id=g, user_id=u) for g, u in members]),
           insert("config_items", cis), insert("ci_relationships", [dict(parent_id=a, child_id=b, relation=r) for a, b, r in rels]),
           insert("slas", slas), insert("problems", problems), insert("change_requests", changes), insert("change_freezes", freezes),
           insert("incidents", incidents), insert("kb_articles", kbs), insert("work_notes", notes), insert("audit_log", audit)]
    return "".join(out)


if __name__ == "__main__":
    (HERE / "seed.sql").write_text(build())
    print(f"wrote {HERE / 'seed.sql'}")
