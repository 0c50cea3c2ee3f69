-- collab gym: company mail and calendars. Table names are disjoint from the itsm gym's.
-- Times are ISO-8601 UTC strings; the gym's clock is collab_context.now.

PRAGMA foreign_keys = ON;

-- Who the agent acts as (an address) and what time it is: ('current_user', 'x@...'), ('now', '...').
CREATE TABLE collab_context (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- The directory: every internal person and the external contacts the company mails with.
CREATE TABLE mailboxes (
    address      TEXT PRIMARY KEY,
    display_name TEXT NOT NULL,
    department   TEXT NOT NULL DEFAULT '',
    title        TEXT NOT NULL DEFAULT '',
    is_external  INTEGER NOT NULL DEFAULT 0 CHECK (is_external IN (0, 1)),
    active       INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1))
);

CREATE TABLE mail_folders (
    id      INTEGER PRIMARY KEY,
    mailbox TEXT NOT NULL REFERENCES mailboxes(address),
    name    TEXT NOT NULL,
    system  INTEGER NOT NULL DEFAULT 0 CHECK (system IN (0, 1)),  -- inbox, sent, archive, trash
    UNIQUE (mailbox, name)
);

-- One row per copy: the sender's copy sits in their sent folder, each internal recipient's in their inbox.
CREATE TABLE messages (
    id          TEXT PRIMARY KEY,                 -- MSG000001
    mailbox     TEXT NOT NULL REFERENCES mailboxes(address),
    folder_id   INTEGER NOT NULL REFERENCES mail_folders(id),
    thread_id   TEXT NOT NULL,
    in_reply_to TEXT REFERENCES messages(id),
    sender      TEXT NOT NULL REFERENCES mailboxes(address),
    subject     TEXT NOT NULL,
    body        TEXT NOT NULL,
    sent_at     TEXT NOT NULL,
    is_read     INTEGER NOT NULL DEFAULT 0 CHECK (is_read IN (0, 1)),
    is_flagged  INTEGER NOT NULL DEFAULT 0 CHECK (is_flagged IN (0, 1))
);

CREATE TABLE message_recipients (
    message_id TEXT NOT NULL REFERENCES messages(id),
    address    TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('to', 'cc')),
    PRIMARY KEY (message_id, address, kind)
);

CREATE TABLE calendars (
    id         TEXT PRIMARY KEY,                  -- CAL0001
    owner      TEXT NOT NULL UNIQUE REFERENCES mailboxes(address),
    name       TEXT NOT NULL,
    timezone   TEXT NOT NULL DEFAULT 'UTC'
);

CREATE TABLE rooms (
    id       TEXT PRIMARY KEY,                    -- RM-RTM-01
    name     TEXT NOT NULL UNIQUE,
    building TEXT NOT NULL,
    capacity INTEGER NOT NULL CHECK (capacity > 0)
);

CREATE TABLE events (
    id          TEXT PRIMARY KEY,                 -- EVT000001
    calendar_id TEXT NOT NULL REFERENCES calendars(id),
    organizer   TEXT NOT NULL REFERENCES mailboxes(address),
    title       TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    location    TEXT NOT NULL DEFAULT '',
    room_id     TEXT REFERENCES rooms(id),
    starts_at   TEXT NOT NULL,
    ends_at     TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('confirmed', 'cancelled')),
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    CHECK (ends_at > starts_at)
);

CREATE TABLE event_attendees (
    event_id TEXT NOT NULL REFERENCES events(id),
    address  TEXT NOT NULL REFERENCES mailboxes(address),
    response TEXT NOT NULL CHECK (response IN ('needs_action', 'accepted', 'declined', 'tentative')),
    PRIMARY KEY (event_id, address)
);

-- Every write a collab tool makes.
CREATE TABLE collab_audit (
    id     INTEGER PRIMARY KEY,
    at     TEXT NOT NULL,
    actor  TEXT NOT NULL,
    object TEXT NOT NULL,                          -- a message or event id
    action TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT ''
);

CREATE INDEX messages_mailbox ON messages(mailbox, folder_id);
CREATE INDEX events_time ON events(starts_at);
CREATE INDEX attendees_address ON event_attendees(address);
