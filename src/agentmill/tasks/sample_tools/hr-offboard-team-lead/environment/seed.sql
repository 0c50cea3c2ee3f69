-- Task state over the gyms' base data.
UPDATE hr_context SET value = 'EMP0226' WHERE key = 'current_user';
INSERT INTO leave_requests (id, employee_id, leave_type, start_date, end_date, days, reason, status, requested_by, approver_id, decided_at, decision_note, created_at, updated_at) VALUES ('LR900020', 'EMP0173', 'annual', '2026-04-13', '2026-04-17', 5, 'Family holiday', 'pending', 'EMP0173', NULL, NULL, '', '2026-03-02T09:00:00Z', '2026-03-02T09:00:00Z');
UPDATE leave_balances SET used_days = used_days + 0, pending_days = pending_days + 5 WHERE employee_id = 'EMP0173' AND leave_type = 'annual' AND year = 2026;
