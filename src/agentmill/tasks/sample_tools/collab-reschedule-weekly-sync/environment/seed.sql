-- Task state over the gyms' base data.
UPDATE collab_context SET value = 'marcus.lindqvist@corvid-logistics.com' WHERE key = 'current_user';
INSERT INTO events (id, calendar_id, organizer, title, description, location, room_id, starts_at, ends_at, status, created_at, updated_at) VALUES ('EVT900010', (SELECT id FROM calendars WHERE owner = 'marcus.lindqvist@corvid-logistics.com'), 'marcus.lindqvist@corvid-logistics.com', 'Service desk weekly sync', '', '', NULL, '2026-03-19T10:00:00Z', '2026-03-19T10:30:00Z', 'confirmed', '2026-03-10T09:00:00Z', '2026-03-10T09:00:00Z');
INSERT INTO event_attendees (event_id, address, response) VALUES ('EVT900010', 'priya.raman@corvid-logistics.com', 'accepted');
INSERT INTO event_attendees (event_id, address, response) VALUES ('EVT900010', 'tomasz.nowicki@corvid-logistics.com', 'accepted');
INSERT INTO event_attendees (event_id, address, response) VALUES ('EVT900010', 'grace.okafor@corvid-logistics.com', 'tentative');
INSERT INTO events (id, calendar_id, organizer, title, description, location, room_id, starts_at, ends_at, status, created_at, updated_at) VALUES ('EVT900011', (SELECT id FROM calendars WHERE owner = 'marcus.lindqvist@corvid-logistics.com'), 'marcus.lindqvist@corvid-logistics.com', 'Service desk weekly sync', '', '', NULL, '2026-03-26T10:00:00Z', '2026-03-26T10:30:00Z', 'confirmed', '2026-03-10T09:00:00Z', '2026-03-10T09:00:00Z');
INSERT INTO event_attendees (event_id, address, response) VALUES ('EVT900011', 'priya.raman@corvid-logistics.com', 'accepted');
INSERT INTO event_attendees (event_id, address, response) VALUES ('EVT900011', 'tomasz.nowicki@corvid-logistics.com', 'accepted');
INSERT INTO event_attendees (event_id, address, response) VALUES ('EVT900011', 'grace.okafor@corvid-logistics.com', 'tentative');
