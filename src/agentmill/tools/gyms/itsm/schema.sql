-- itsm gym: an IT service desk (incidents, problems, changes, CMDB, knowledge, SLAs).
-- Table names are disjoint from every other bundled gym so several gyms can share one database.
-- Times are ISO-8601 UTC strings ('2026-03-16T09:30:00Z'); the gym's clock is itsm_context.now.

PRAGMA foreign_keys = ON;

-- Who the agent acts as and what time it is: rows ('current_user', 'USR0001'), ('now', '...').
CREATE TABLE itsm_context (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE users (
    id          TEXT PRIMARY KEY,                 -- USR0001
    name        TEXT NOT NULL,
    email       TEXT NOT NULL UNIQUE,
    department  TEXT NOT NULL,
    title       TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('admin', 'manager', 'agent', 'requester')),
    location    TEXT NOT NULL,
    manager_id  TEXT REFERENCES users(id),
    active      INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1))
);

CREATE TABLE groups (
    id          TEXT PRIMARY KEY,                 -- GRP001
    name        TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL,
    email       TEXT NOT NULL,
    manager_id  TEXT REFERENCES users(id),
    active      INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1))
);

CREATE TABLE group_members (
    group_id TEXT NOT NULL REFERENCES groups(id),
    user_id  TEXT NOT NULL REFERENCES users(id),
    PRIMARY KEY (group_id, user_id)
);

CREATE TABLE config_items (
    id             TEXT PRIMARY KEY,              -- CI00001
    name           TEXT NOT NULL UNIQUE,
    ci_class       TEXT NOT NULL CHECK (ci_class IN ('business_service', 'application', 'server', 'database', 'network_device', 'storage', 'workstation')),
    environment    TEXT NOT NULL CHECK (environment IN ('production', 'staging', 'development')),
    status         TEXT NOT NULL CHECK (status IN ('operational', 'degraded', 'down', 'maintenance', 'retired')),
    criticality    INTEGER NOT NULL CHECK (criticality BETWEEN 1 AND 4),  -- 1 = business critical
    owner_group_id TEXT NOT NULL REFERENCES groups(id),
    location       TEXT NOT NULL,
    ip_address     TEXT,
    os             TEXT,
    updated_at     TEXT NOT NULL
);

-- parent depends on child (a service depends on its applications, an application runs on servers).
CREATE TABLE ci_relationships (
    parent_id TEXT NOT NULL REFERENCES config_items(id),
    child_id  TEXT NOT NULL REFERENCES config_items(id),
    relation  TEXT NOT NULL CHECK (relation IN ('depends_on', 'runs_on', 'connects_to')),
    PRIMARY KEY (parent_id, child_id)
);

-- SLA definitions: one per incident priority.
CREATE TABLE slas (
    id                 TEXT PRIMARY KEY,          -- SLA-P1
    name               TEXT NOT NULL,
    priority           INTEGER NOT NULL UNIQUE CHECK (priority BETWEEN 1 AND 5),
    response_minutes   INTEGER NOT NULL,
    resolution_minutes INTEGER NOT NULL
);

CREATE TABLE problems (
    number              TEXT PRIMARY KEY,         -- PRB0001001
    short_description   TEXT NOT NULL,
    description         TEXT NOT NULL DEFAULT '',
    state               TEXT NOT NULL CHECK (state IN ('new', 'root_cause_analysis', 'fix_in_progress', 'resolved', 'closed')),
    priority            INTEGER NOT NULL CHECK (priority BETWEEN 1 AND 5),
    ci_id               TEXT REFERENCES config_items(id),
    assignment_group_id TEXT REFERENCES groups(id),
    assigned_to         TEXT REFERENCES users(id),
    known_error         INTEGER NOT NULL DEFAULT 0 CHECK (known_error IN (0, 1)),
    workaround          TEXT NOT NULL DEFAULT '',
    root_cause          TEXT NOT NULL DEFAULT '',
    resolution_notes    TEXT NOT NULL DEFAULT '',
    opened_by           TEXT NOT NULL REFERENCES users(id),
    opened_at           TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    resolved_at         TEXT,
    closed_at           TEXT
);

CREATE TABLE change_requests (
    number              TEXT PRIMARY KEY,         -- CHG0003001
    short_description   TEXT NOT NULL,
    description         TEXT NOT NULL DEFAULT '',
    type                TEXT NOT NULL CHECK (type IN ('standard', 'normal', 'emergency')),
    state               TEXT NOT NULL CHECK (state IN ('new', 'assess', 'scheduled', 'implement', 'review', 'closed', 'canceled')),
    risk                TEXT NOT NULL CHECK (risk IN ('low', 'moderate', 'high')),
    ci_id               TEXT REFERENCES config_items(id),
    assignment_group_id TEXT NOT NULL REFERENCES groups(id),
    assigned_to         TEXT REFERENCES users(id),
    requested_by        TEXT NOT NULL REFERENCES users(id),
    approval            TEXT NOT NULL CHECK (approval IN ('not_required', 'not_requested', 'requested', 'approved', 'rejected')),
    approved_by         TEXT REFERENCES users(id),
    planned_start       TEXT NOT NULL,
    planned_end         TEXT NOT NULL,
    implementation_plan TEXT NOT NULL DEFAULT '',
    backout_plan        TEXT NOT NULL DEFAULT '',
    close_code          TEXT CHECK (close_code IN ('successful', 'successful_with_issues', 'unsuccessful')),
    close_notes         TEXT NOT NULL DEFAULT '',
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    CHECK (planned_end > planned_start)
);

-- Change freeze (blackout) windows: only emergency changes may be planned inside one.
CREATE TABLE change_freezes (
    id        TEXT PRIMARY KEY,                   -- FRZ001
    name      TEXT NOT NULL,
    starts_at TEXT NOT NULL,
    ends_at   TEXT NOT NULL,
    reason    TEXT NOT NULL
);

CREATE TABLE incidents (
    number              TEXT PRIMARY KEY,         -- INC0010001
    short_description   TEXT NOT NULL,
    description         TEXT NOT NULL DEFAULT '',
    category            TEXT NOT NULL CHECK (category IN ('hardware', 'software', 'network', 'access', 'email', 'database', 'security', 'other')),
    caller_id           TEXT NOT NULL REFERENCES users(id),
    opened_by           TEXT NOT NULL REFERENCES users(id),
    ci_id               TEXT REFERENCES config_items(id),
    impact              TEXT NOT NULL CHECK (impact IN ('high', 'medium', 'low')),
    urgency             TEXT NOT NULL CHECK (urgency IN ('high', 'medium', 'low')),
    priority            INTEGER NOT NULL CHECK (priority BETWEEN 1 AND 5),  -- from impact x urgency
    state               TEXT NOT NULL CHECK (state IN ('new', 'in_progress', 'on_hold', 'resolved', 'closed', 'canceled')),
    on_hold_reason      TEXT CHECK (on_hold_reason IN ('awaiting_caller', 'awaiting_vendor', 'awaiting_change', 'awaiting_problem')),
    assignment_group_id TEXT REFERENCES groups(id),
    assigned_to         TEXT REFERENCES users(id),
    problem_id          TEXT REFERENCES problems(number),
    sla_id              TEXT NOT NULL REFERENCES slas(id),
    resolve_by          TEXT NOT NULL,
    resolution_code     TEXT CHECK (resolution_code IN ('fixed', 'workaround', 'user_error', 'duplicate', 'no_fault_found', 'known_error')),
    resolution_notes    TEXT NOT NULL DEFAULT '',
    reopen_count        INTEGER NOT NULL DEFAULT 0,
    opened_at           TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    resolved_at         TEXT,
    closed_at           TEXT
);

CREATE TABLE kb_articles (
    number       TEXT PRIMARY KEY,                -- KB0001001
    title        TEXT NOT NULL,
    body         TEXT NOT NULL,
    category     TEXT NOT NULL,
    state        TEXT NOT NULL CHECK (state IN ('draft', 'review', 'published', 'retired')),
    visibility   TEXT NOT NULL CHECK (visibility IN ('public', 'internal')),
    author_id    TEXT NOT NULL REFERENCES users(id),
    ci_id        TEXT REFERENCES config_items(id),
    view_count   INTEGER NOT NULL DEFAULT 0,
    published_at TEXT,
    updated_at   TEXT NOT NULL
);

-- Work notes (internal) and comments (visible to the caller) on incidents, problems and changes.
CREATE TABLE work_notes (
    id         INTEGER PRIMARY KEY,
    record     TEXT NOT NULL,                     -- INC..., PRB..., CHG...
    author_id  TEXT NOT NULL REFERENCES users(id),
    kind       TEXT NOT NULL CHECK (kind IN ('work_note', 'comment')),
    body       TEXT NOT NULL CHECK (length(body) > 0),
    created_at TEXT NOT NULL
);

-- Typed links between records of any kind (incident <-> change, problem <-> change, record <-> KB).
CREATE TABLE record_links (
    id         INTEGER PRIMARY KEY,
    source     TEXT NOT NULL,
    target     TEXT NOT NULL,
    relation   TEXT NOT NULL CHECK (relation IN ('caused_by', 'fixed_by', 'related_to', 'duplicate_of', 'documented_in')),
    created_by TEXT NOT NULL REFERENCES users(id),
    created_at TEXT NOT NULL,
    UNIQUE (source, target, relation)
);

-- Every write a tool makes, one row per changed field.
CREATE TABLE audit_log (
    id        INTEGER PRIMARY KEY,
    at        TEXT NOT NULL,
    actor_id  TEXT NOT NULL REFERENCES users(id),
    record    TEXT NOT NULL,
    action    TEXT NOT NULL,
    field     TEXT NOT NULL DEFAULT '',
    old_value TEXT,
    new_value TEXT
);

CREATE INDEX incidents_state ON incidents(state);
CREATE INDEX incidents_group ON incidents(assignment_group_id);
CREATE INDEX incidents_caller ON incidents(caller_id);
CREATE INDEX work_notes_record ON work_notes(record);
CREATE INDEX audit_log_record ON audit_log(record);
