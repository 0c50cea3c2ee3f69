-- Task state over the gyms' base data.
UPDATE proc_context SET value = 'EMP0066' WHERE key = 'current_user';
INSERT INTO requisitions (id, title, requester_id, cost_centre_id, vendor_id, justification, needed_by, status, total, approver_id, decided_at, decision_note, created_at, updated_at) VALUES ('PR90005', 'Safety boots and jackets for Gdansk', 'EMP0153', 'CC-210', 'VEN011', 'Planned purchase', '2026-03-31', 'approved', 1210, 'EMP0047', '2026-03-11T10:00:00Z', '', '2026-03-10T09:00:00Z', '2026-03-11T10:00:00Z');
INSERT INTO requisition_lines (requisition_id, line_no, description, quantity, unit_price) VALUES ('PR90005', 1, 'Safety boots', 10, 89);
INSERT INTO requisition_lines (requisition_id, line_no, description, quantity, unit_price) VALUES ('PR90005', 2, 'Hi-vis jacket', 10, 32);
UPDATE budgets SET committed = committed + 1210, spent = spent + 0 WHERE cost_centre_id = 'CC-210' AND year = 2026;
