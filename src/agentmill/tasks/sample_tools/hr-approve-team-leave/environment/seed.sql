-- Task state over the gyms' base data.
UPDATE hr_context SET value = 'EMP0053' WHERE key = 'current_user';
INSERT INTO leave_requests (id, employee_id, leave_type, start_date, end_date, days, reason, status, requested_by, approver_id, decided_at, decision_note, created_at, updated_at) VALUES ('LR900001', 'EMP0088', 'annual', '2026-04-27', '2026-04-30', 4, 'Visiting family', 'pending', 'EMP0088', NULL, NULL, '', '2026-03-12T08:10:00Z', '2026-03-12T08:10:00Z');
UPDATE leave_balances SET used_days = used_days + 0, pending_days = pending_days + 4 WHERE employee_id = 'EMP0088' AND leave_type = 'annual' AND year = 2026;
INSERT INTO leave_requests (id, employee_id, leave_type, start_date, end_date, days, reason, status, requested_by, approver_id, decided_at, decision_note, created_at, updated_at) VALUES ('LR900002', 'EMP0064', 'annual', '2026-04-27', '2026-04-28', 2, 'Long weekend', 'pending', 'EMP0064', NULL, NULL, '', '2026-03-13T15:00:00Z', '2026-03-13T15:00:00Z');
UPDATE leave_balances SET used_days = used_days + 0, pending_days = pending_days + 2 WHERE employee_id = 'EMP0064' AND leave_type = 'annual' AND year = 2026;
