-- Task state over the gyms' base data.
UPDATE hr_context SET value = 'EMP0045' WHERE key = 'current_user';
INSERT INTO leave_requests (id, employee_id, leave_type, start_date, end_date, days, reason, status, requested_by, approver_id, decided_at, decision_note, created_at, updated_at) VALUES ('LR900007', 'EMP0045', 'annual', '2026-04-20', '2026-04-24', 5, 'Family holiday', 'pending', 'EMP0045', NULL, NULL, '', '2026-03-10T09:00:00Z', '2026-03-10T09:00:00Z');
UPDATE leave_balances SET used_days = used_days + 0, pending_days = pending_days + 5 WHERE employee_id = 'EMP0045' AND leave_type = 'annual' AND year = 2026;
