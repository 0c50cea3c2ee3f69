-- Task state over the gyms' base data.
UPDATE itsm_context SET value = 'USR0029' WHERE key = 'current_user';
INSERT INTO kb_articles (number, title, body, category, state, visibility, author_id, ci_id, view_count, published_at, updated_at) VALUES ('KB0002001', 'Resetting a stuck CRM sync for mobile users', 'Symptoms: the CRM mobile app shows old data.

Steps:
1. Sign out.
2. Clear app data.
3. Sign in and wait for the full sync.', 'software', 'review', 'public', 'USR0030', 'CI00032', 0, NULL, '2026-03-13T15:00:00Z');
INSERT INTO kb_articles (number, title, body, category, state, visibility, author_id, ci_id, view_count, published_at, updated_at) VALUES ('KB0002002', 'CRM export limits', 'Exports are limited to 50,000 rows per file; split larger exports by month.', 'software', 'review', 'internal', 'USR0029', 'CI00032', 0, NULL, '2026-03-14T15:00:00Z');
