-- Task state over the gyms' base data.
UPDATE proc_context SET value = 'EMP0019' WHERE key = 'current_user';
INSERT INTO requisitions (id, title, requester_id, cost_centre_id, vendor_id, justification, needed_by, status, total, approver_id, decided_at, decision_note, created_at, updated_at) VALUES ('PR90010', 'Docking stations for the Linux team', 'EMP0019', 'CC-110', 'VEN001', 'Planned purchase', '2026-04-01', 'approved', 840, 'EMP0001', '2026-03-10T10:00:00Z', '', '2026-03-09T09:00:00Z', '2026-03-10T10:00:00Z');
INSERT INTO requisition_lines (requisition_id, line_no, description, quantity, unit_price) VALUES ('PR90010', 1, 'Docking station', 4, 210);
UPDATE budgets SET committed = committed + 840, spent = spent + 0 WHERE cost_centre_id = 'CC-110' AND year = 2026;
INSERT INTO requisitions (id, title, requester_id, cost_centre_id, vendor_id, justification, needed_by, status, total, approver_id, decided_at, decision_note, created_at, updated_at) VALUES ('PR90011', 'Docking stations for the Linux team', 'EMP0019', 'CC-110', 'VEN001', 'Planned purchase', '2026-04-01', 'submitted', 840, NULL, NULL, '', '2026-03-12T09:00:00Z', '2026-03-12T09:00:00Z');
INSERT INTO requisition_lines (requisition_id, line_no, description, quantity, unit_price) VALUES ('PR90011', 1, 'Docking station', 4, 210);
