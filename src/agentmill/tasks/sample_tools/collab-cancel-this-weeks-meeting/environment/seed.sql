-- Task state over the gyms' base data.
UPDATE collab_context SET value = 'helena.varga@corvid-logistics.com' WHERE key = 'current_user';
INSERT INTO events (id, calendar_id, organizer, title, description, location, room_id, starts_at, ends_at, status, created_at, updated_at) VALUES ('EVT900020', (SELECT id FROM calendars WHERE owner = 'helena.varga@corvid-logistics.com'), 'helena.varga@corvid-logistics.com', 'Budget review', '', 'Erasmus', 'RM-RTM-02', '2026-03-20T15:00:00Z', '2026-03-20T16:00:00Z', 'confirmed', '2026-03-10T09:00:00Z', '2026-03-10T09:00:00Z');
INSERT INTO event_attendees (event_id, address, response) VALUES ('EVT900020', 'henrik.dahl@corvid-logistics.com', 'accepted');
INSERT INTO event_attendees (event_id, address, response) VALUES ('EVT900020', 'dana.quinn@corvid-logistics.com', 'accepted');
INSERT INTO events (id, calendar_id, organizer, title, description, location, room_id, starts_at, ends_at, status, created_at, updated_at) VALUES ('EVT900021', (SELECT id FROM calendars WHERE owner = 'helena.varga@corvid-logistics.com'), 'helena.varga@corvid-logistics.com', 'Budget review', '', 'Erasmus', 'RM-RTM-02', '2026-03-27T15:00:00Z', '2026-03-27T16:00:00Z', 'confirmed', '2026-03-10T09:00:00Z', '2026-03-10T09:00:00Z');
INSERT INTO event_attendees (event_id, address, response) VALUES ('EVT900021', 'henrik.dahl@corvid-logistics.com', 'accepted');
INSERT INTO event_attendees (event_id, address, response) VALUES ('EVT900021', 'dana.quinn@corvid-logistics.com', 'accepted');
