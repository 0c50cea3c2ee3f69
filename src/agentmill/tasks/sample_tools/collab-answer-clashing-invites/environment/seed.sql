-- Task state over the gyms' base data.
UPDATE collab_context SET value = 'priya.raman@corvid-logistics.com' WHERE key = 'current_user';
INSERT INTO events (id, calendar_id, organizer, title, description, location, room_id, starts_at, ends_at, status, created_at, updated_at) VALUES ('EVT900030', (SELECT id FROM calendars WHERE owner = 'marcus.lindqvist@corvid-logistics.com'), 'marcus.lindqvist@corvid-logistics.com', 'Vendor demo: service desk chatbot', '', '', NULL, '2026-03-18T14:00:00Z', '2026-03-18T15:00:00Z', 'confirmed', '2026-03-10T09:00:00Z', '2026-03-10T09:00:00Z');
INSERT INTO event_attendees (event_id, address, response) VALUES ('EVT900030', 'priya.raman@corvid-logistics.com', 'needs_action');
INSERT INTO event_attendees (event_id, address, response) VALUES ('EVT900030', 'tomasz.nowicki@corvid-logistics.com', 'accepted');
INSERT INTO events (id, calendar_id, organizer, title, description, location, room_id, starts_at, ends_at, status, created_at, updated_at) VALUES ('EVT900031', (SELECT id FROM calendars WHERE owner = 'sofia.marin@corvid-logistics.com'), 'sofia.marin@corvid-logistics.com', 'Incident review: VPN outage', '', '', NULL, '2026-03-18T14:00:00Z', '2026-03-18T15:00:00Z', 'confirmed', '2026-03-10T09:00:00Z', '2026-03-10T09:00:00Z');
INSERT INTO event_attendees (event_id, address, response) VALUES ('EVT900031', 'priya.raman@corvid-logistics.com', 'needs_action');
INSERT INTO event_attendees (event_id, address, response) VALUES ('EVT900031', 'kenji.aoki@corvid-logistics.com', 'accepted');
