-- procurement gym: vendors, budgets, requisitions, approvals, purchase orders and goods receipts of
-- Corvid Logistics. Table names are disjoint from the itsm, collab and hr gyms'. Times are ISO-8601
-- UTC strings, amounts are EUR; the gym's clock is proc_context.now.

PRAGMA foreign_keys = ON;

-- Who the agent acts as (a user id) and what time it is: ('current_user', 'EMP0054'), ('now', '...').
CREATE TABLE proc_context (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- The cost centres every purchase is charged to (one per department), owned by the department head.
CREATE TABLE cost_centres (
    id       TEXT PRIMARY KEY,                    -- CC-110
    name     TEXT NOT NULL UNIQUE,
    owner_id TEXT NOT NULL                        -- a proc_users id (checked by the tools; users reference cost centres)
);

-- Procurement roles: requesters raise requisitions, buyers place orders, approvers and finance approve up to their limit.
CREATE TABLE proc_users (
    id             TEXT PRIMARY KEY,              -- EMP0054 (the same people as the hr gym)
    name           TEXT NOT NULL,
    email          TEXT NOT NULL UNIQUE,
    cost_centre_id TEXT NOT NULL REFERENCES cost_centres(id),
    role           TEXT NOT NULL CHECK (role IN ('requester', 'buyer', 'approver', 'finance')),
    approval_limit INTEGER NOT NULL DEFAULT 0 CHECK (approval_limit >= 0),
    active         INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
    CHECK (role IN ('approver', 'finance') OR approval_limit = 0)
);

CREATE TABLE vendors (
    id                 TEXT PRIMARY KEY,          -- VEN001
    name               TEXT NOT NULL UNIQUE,
    category           TEXT NOT NULL CHECK (category IN ('it_hardware', 'software', 'office', 'facilities', 'logistics', 'services', 'marketing')),
    country            TEXT NOT NULL,
    contact_email      TEXT NOT NULL,
    payment_terms_days INTEGER NOT NULL CHECK (payment_terms_days IN (14, 30, 45, 60)),
    status             TEXT NOT NULL CHECK (status IN ('active', 'on_hold', 'blocked')),
    status_reason      TEXT NOT NULL DEFAULT '',
    updated_at         TEXT NOT NULL
);

-- Yearly budget per cost centre: approved requisitions commit money, received goods spend it.
CREATE TABLE budgets (
    cost_centre_id TEXT NOT NULL REFERENCES cost_centres(id),
    year           INTEGER NOT NULL CHECK (year BETWEEN 2000 AND 2100),
    amount         REAL NOT NULL CHECK (amount >= 0),
    committed      REAL NOT NULL DEFAULT 0 CHECK (committed >= 0),
    spent          REAL NOT NULL DEFAULT 0 CHECK (spent >= 0),
    updated_at     TEXT NOT NULL,
    PRIMARY KEY (cost_centre_id, year),
    CHECK (committed + spent <= amount + 0.005)
);

CREATE TABLE requisitions (
    id             TEXT PRIMARY KEY,              -- PR00001
    title          TEXT NOT NULL,
    requester_id   TEXT NOT NULL REFERENCES proc_users(id),
    cost_centre_id TEXT NOT NULL REFERENCES cost_centres(id),
    vendor_id      TEXT NOT NULL REFERENCES vendors(id),
    justification  TEXT NOT NULL DEFAULT '',
    needed_by      TEXT NOT NULL,                 -- a date
    status         TEXT NOT NULL CHECK (status IN ('draft', 'submitted', 'approved', 'rejected', 'cancelled', 'ordered')),
    total          REAL NOT NULL DEFAULT 0 CHECK (total >= 0),
    approver_id    TEXT REFERENCES proc_users(id),
    decided_at     TEXT,
    decision_note  TEXT NOT NULL DEFAULT '',
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL,
    CHECK (approver_id IS NULL OR approver_id != requester_id),
    CHECK (status NOT IN ('approved', 'rejected', 'ordered') OR approver_id IS NOT NULL)
);

CREATE TABLE requisition_lines (
    requisition_id TEXT NOT NULL REFERENCES requisitions(id),
    line_no        INTEGER NOT NULL CHECK (line_no > 0),
    description    TEXT NOT NULL,
    quantity       INTEGER NOT NULL CHECK (quantity > 0),
    unit_price     REAL NOT NULL CHECK (unit_price >= 0),
    PRIMARY KEY (requisition_id, line_no)
);

CREATE TABLE purchase_orders (
    id             TEXT PRIMARY KEY,              -- PO000001
    requisition_id TEXT NOT NULL UNIQUE REFERENCES requisitions(id),
    vendor_id      TEXT NOT NULL REFERENCES vendors(id),
    buyer_id       TEXT NOT NULL REFERENCES proc_users(id),
    status         TEXT NOT NULL CHECK (status IN ('issued', 'partially_received', 'received', 'closed', 'cancelled')),
    total          REAL NOT NULL CHECK (total >= 0),
    issued_at      TEXT NOT NULL,
    updated_at     TEXT NOT NULL
);

CREATE TABLE po_lines (
    po_id        TEXT NOT NULL REFERENCES purchase_orders(id),
    line_no      INTEGER NOT NULL CHECK (line_no > 0),
    description  TEXT NOT NULL,
    quantity     INTEGER NOT NULL CHECK (quantity > 0),
    unit_price   REAL NOT NULL CHECK (unit_price >= 0),
    received_qty INTEGER NOT NULL DEFAULT 0 CHECK (received_qty >= 0),
    PRIMARY KEY (po_id, line_no),
    CHECK (received_qty <= quantity)
);

CREATE TABLE goods_receipts (
    id          TEXT PRIMARY KEY,                 -- GR000001
    po_id       TEXT NOT NULL REFERENCES purchase_orders(id),
    line_no     INTEGER NOT NULL,
    quantity    INTEGER NOT NULL CHECK (quantity > 0),
    received_by TEXT NOT NULL REFERENCES proc_users(id),
    received_at TEXT NOT NULL,
    note        TEXT NOT NULL DEFAULT '',
    FOREIGN KEY (po_id, line_no) REFERENCES po_lines(po_id, line_no)
);

-- Every changed field of every write a procurement tool makes.
CREATE TABLE proc_audit (
    id        INTEGER PRIMARY KEY,
    at        TEXT NOT NULL,
    actor_id  TEXT NOT NULL REFERENCES proc_users(id),
    record    TEXT NOT NULL,                      -- PR00001, PR00001#2, PO000001, PO000001#1, VEN001, CC-110/2026
    action    TEXT NOT NULL,
    field     TEXT NOT NULL DEFAULT '',
    old_value TEXT,
    new_value TEXT
);

CREATE INDEX requisitions_status ON requisitions(status);
CREATE INDEX requisitions_cc ON requisitions(cost_centre_id);
CREATE INDEX purchase_orders_status ON purchase_orders(status);
CREATE INDEX goods_receipts_po ON goods_receipts(po_id);
CREATE INDEX proc_audit_record ON proc_audit(record);
