-- Task state over the gyms' base data.
UPDATE hr_context SET value = 'EMP0133' WHERE key = 'current_user';
INSERT INTO leave_requests (id, employee_id, leave_type, start_date, end_date, days, reason, status, requested_by, approver_id, decided_at, decision_note, created_at, updated_at) VALUES ('LR900003', 'EMP0146', 'annual', '2026-03-30', '2026-04-02', 4, 'Easter trip', 'pending', 'EMP0146', NULL, NULL, '', '2026-03-02T10:00:00Z', '2026-03-02T10:00:00Z');
UPDATE leave_balances SET used_days = used_days + 0, pending_days = pending_days + 4 WHERE employee_id = 'EMP0146' AND leave_type = 'annual' AND year = 2026;
INSERT INTO leave_requests (id, employee_id, leave_type, start_date, end_date, days, reason, status, requested_by, approver_id, decided_at, decision_note, created_at, updated_at) VALUES ('LR900004', 'EMP0156', 'annual', '2026-03-30', '2026-04-02', 4, 'Family visit', 'pending', 'EMP0156', NULL, NULL, '', '2026-03-09T14:30:00Z', '2026-03-09T14:30:00Z');
UPDATE leave_balances SET used_days = used_days + 0, pending_days = pending_days + 4 WHERE employee_id = 'EMP0156' AND leave_type = 'annual' AND year = 2026;
