-- hr gym: people, organisation, leave, onboarding and job changes of Corvid Logistics.
-- Table names are disjoint from the itsm and collab gyms'. Times are ISO-8601 UTC strings, dates
-- are YYYY-MM-DD; the gym's clock is hr_context.now.

PRAGMA foreign_keys = ON;

-- Who the agent acts as (an employee id) and what time it is: ('current_user', 'EMP0052'), ('now', '...').
CREATE TABLE hr_context (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE departments (
    id          TEXT PRIMARY KEY,                 -- DEP01
    name        TEXT NOT NULL UNIQUE,
    cost_centre TEXT NOT NULL UNIQUE,             -- CC-110
    head_id     TEXT REFERENCES employees(id) DEFERRABLE INITIALLY DEFERRED
);

-- A job in a department, with its grade and the salary band every holder's salary must lie in.
CREATE TABLE positions (
    id            TEXT PRIMARY KEY,               -- POS001
    title         TEXT NOT NULL,
    department_id TEXT NOT NULL REFERENCES departments(id),
    grade         INTEGER NOT NULL CHECK (grade BETWEEN 1 AND 9),
    min_salary    INTEGER NOT NULL CHECK (min_salary > 0),
    max_salary    INTEGER NOT NULL,
    headcount     INTEGER NOT NULL CHECK (headcount >= 0),
    CHECK (max_salary >= min_salary),
    UNIQUE (department_id, title)
);

CREATE TABLE employees (
    id               TEXT PRIMARY KEY,            -- EMP0001 (same number as the itsm user USR0001)
    name             TEXT NOT NULL,
    email            TEXT NOT NULL UNIQUE,
    department_id    TEXT NOT NULL REFERENCES departments(id),
    position_id      TEXT NOT NULL REFERENCES positions(id),
    manager_id       TEXT REFERENCES employees(id),
    role             TEXT NOT NULL CHECK (role IN ('employee', 'manager', 'hr')),
    status           TEXT NOT NULL CHECK (status IN ('pre_hire', 'active', 'terminated')),
    location         TEXT NOT NULL,
    salary           INTEGER NOT NULL CHECK (salary > 0),   -- yearly, EUR
    hire_date        TEXT NOT NULL,
    termination_date TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    CHECK (manager_id IS NULL OR manager_id != id),
    CHECK ((status = 'terminated') = (termination_date IS NOT NULL))
);

-- capped types have a yearly balance per employee; uncapped ones (unpaid) do not.
CREATE TABLE leave_types (
    code            TEXT PRIMARY KEY,             -- annual, sick, compassionate, unpaid
    name            TEXT NOT NULL,
    default_days    REAL NOT NULL CHECK (default_days >= 0),
    capped          INTEGER NOT NULL CHECK (capped IN (0, 1)),
    notice_days     INTEGER NOT NULL CHECK (notice_days >= 0),  -- how far ahead it must be requested
    backdate_days   INTEGER NOT NULL CHECK (backdate_days >= 0) -- how far back it may be recorded
);

CREATE TABLE leave_balances (
    employee_id   TEXT NOT NULL REFERENCES employees(id),
    leave_type    TEXT NOT NULL REFERENCES leave_types(code),
    year          INTEGER NOT NULL CHECK (year BETWEEN 2000 AND 2100),
    entitled_days REAL NOT NULL CHECK (entitled_days >= 0),
    used_days     REAL NOT NULL DEFAULT 0 CHECK (used_days >= 0),
    pending_days  REAL NOT NULL DEFAULT 0 CHECK (pending_days >= 0),
    updated_at    TEXT NOT NULL,
    PRIMARY KEY (employee_id, leave_type, year),
    CHECK (used_days + pending_days <= entitled_days)
);

CREATE TABLE public_holidays (
    day  TEXT PRIMARY KEY,                        -- 2026-04-03
    name TEXT NOT NULL
);

CREATE TABLE leave_requests (
    id            TEXT PRIMARY KEY,               -- LR000001
    employee_id   TEXT NOT NULL REFERENCES employees(id),
    leave_type    TEXT NOT NULL REFERENCES leave_types(code),
    start_date    TEXT NOT NULL,
    end_date      TEXT NOT NULL,
    days          REAL NOT NULL CHECK (days > 0),  -- working days: Monday-Friday, not public holidays
    reason        TEXT NOT NULL DEFAULT '',
    status        TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'cancelled')),
    requested_by  TEXT NOT NULL REFERENCES employees(id),
    approver_id   TEXT REFERENCES employees(id),
    decided_at    TEXT,
    decision_note TEXT NOT NULL DEFAULT '',
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    CHECK (end_date >= start_date),
    CHECK (approver_id IS NULL OR approver_id != employee_id),
    CHECK (status NOT IN ('approved', 'rejected') OR approver_id IS NOT NULL),
    CHECK (status != 'pending' OR (approver_id IS NULL AND decided_at IS NULL))
);

CREATE TABLE onboarding_checklists (
    id           TEXT PRIMARY KEY,                -- OB0001
    employee_id  TEXT NOT NULL UNIQUE REFERENCES employees(id),
    owner_id     TEXT NOT NULL REFERENCES employees(id),   -- the HR person running it
    start_date   TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('open', 'completed', 'cancelled')),
    completed_at TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    CHECK ((status = 'completed') = (completed_at IS NOT NULL))
);

CREATE TABLE onboarding_tasks (
    checklist_id TEXT NOT NULL REFERENCES onboarding_checklists(id),
    seq          INTEGER NOT NULL CHECK (seq > 0),
    title        TEXT NOT NULL,
    owner_role   TEXT NOT NULL CHECK (owner_role IN ('hr', 'manager', 'employee')),
    mandatory    INTEGER NOT NULL CHECK (mandatory IN (0, 1)),
    status       TEXT NOT NULL CHECK (status IN ('todo', 'done', 'skipped')),
    done_by      TEXT REFERENCES employees(id),
    done_at      TEXT,
    note         TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (checklist_id, seq),
    CHECK ((status = 'todo') = (done_by IS NULL)),
    CHECK (status != 'skipped' OR mandatory = 0)
);

-- Promotions, transfers and salary changes: proposed by the manager or HR, decided by HR.
CREATE TABLE job_changes (
    id                TEXT PRIMARY KEY,           -- JC0001
    employee_id       TEXT NOT NULL REFERENCES employees(id),
    kind              TEXT NOT NULL CHECK (kind IN ('promotion', 'transfer', 'salary')),
    old_position_id   TEXT NOT NULL REFERENCES positions(id),
    new_position_id   TEXT NOT NULL REFERENCES positions(id),
    old_salary        INTEGER NOT NULL CHECK (old_salary > 0),
    new_salary        INTEGER NOT NULL CHECK (new_salary > 0),
    new_manager_id    TEXT REFERENCES employees(id),
    effective_date    TEXT NOT NULL,
    justification     TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('submitted', 'approved', 'rejected', 'withdrawn')),
    requested_by      TEXT NOT NULL REFERENCES employees(id),
    decided_by        TEXT REFERENCES employees(id),
    decision_comment  TEXT NOT NULL DEFAULT '',
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    CHECK (decided_by IS NULL OR (decided_by != requested_by AND decided_by != employee_id)),
    CHECK ((status IN ('approved', 'rejected')) = (decided_by IS NOT NULL))
);

-- Every changed field of every write an hr tool makes.
CREATE TABLE hr_audit (
    id        INTEGER PRIMARY KEY,
    at        TEXT NOT NULL,
    actor_id  TEXT NOT NULL REFERENCES employees(id),
    record    TEXT NOT NULL,                      -- EMP0001, LR000001, OB0001, OB0001#3, JC0001, EMP0001/annual/2026
    action    TEXT NOT NULL,
    field     TEXT NOT NULL DEFAULT '',
    old_value TEXT,
    new_value TEXT
);

CREATE INDEX employees_manager ON employees(manager_id);
CREATE INDEX employees_department ON employees(department_id);
CREATE INDEX leave_requests_employee ON leave_requests(employee_id, start_date);
CREATE INDEX leave_requests_status ON leave_requests(status);
CREATE INDEX job_changes_employee ON job_changes(employee_id);
CREATE INDEX hr_audit_record ON hr_audit(record);
