-- Task state over the gyms' base data.
UPDATE hr_context SET value = 'EMP0241' WHERE key = 'current_user';
UPDATE onboarding_tasks SET status = 'done', done_by = 'EMP0041', done_at = '2026-03-12T11:00:00Z' WHERE checklist_id = 'OB0013' AND seq IN (4, 5, 6);
UPDATE onboarding_tasks SET status = 'done', done_by = 'EMP0301', done_at = '2026-03-13T09:00:00Z' WHERE checklist_id = 'OB0013' AND seq = 7;
