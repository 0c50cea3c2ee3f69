-- Task state over the gyms' base data.
UPDATE hr_context SET value = 'EMP0217' WHERE key = 'current_user';
INSERT INTO leave_requests (id, employee_id, leave_type, start_date, end_date, days, reason, status, requested_by, approver_id, decided_at, decision_note, created_at, updated_at) VALUES ('LR900005', 'EMP0217', 'annual', '2026-05-18', '2026-05-22', 5, 'Lisbon trip', 'approved', 'EMP0217', 'EMP0045', '2026-02-21T10:00:00Z', '', '2026-02-20T09:00:00Z', '2026-02-21T10:00:00Z');
UPDATE leave_balances SET used_days = used_days + 5, pending_days = pending_days + 0 WHERE employee_id = 'EMP0217' AND leave_type = 'annual' AND year = 2026;
INSERT INTO leave_requests (id, employee_id, leave_type, start_date, end_date, days, reason, status, requested_by, approver_id, decided_at, decision_note, created_at, updated_at) VALUES ('LR900006', 'EMP0217', 'annual', '2026-07-06', '2026-07-10', 5, 'Summer', 'pending', 'EMP0217', NULL, NULL, '', '2026-03-01T09:00:00Z', '2026-03-01T09:00:00Z');
UPDATE leave_balances SET used_days = used_days + 0, pending_days = pending_days + 5 WHERE employee_id = 'EMP0217' AND leave_type = 'annual' AND year = 2026;
