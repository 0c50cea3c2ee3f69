-- Task state over the gyms' base data.
UPDATE proc_context SET value = 'EMP0059' WHERE key = 'current_user';
INSERT INTO requisitions (id, title, requester_id, cost_centre_id, vendor_id, justification, needed_by, status, total, approver_id, decided_at, decision_note, created_at, updated_at) VALUES ('PR90009', 'Load-test environment licences', 'EMP0282', 'CC-200', 'VEN007', 'Planned purchase', '2026-04-20', 'submitted', 38000, NULL, NULL, '', '2026-03-11T09:00:00Z', '2026-03-11T09:00:00Z');
INSERT INTO requisition_lines (requisition_id, line_no, description, quantity, unit_price) VALUES ('PR90009', 1, 'Module licence', 10, 2600);
INSERT INTO requisition_lines (requisition_id, line_no, description, quantity, unit_price) VALUES ('PR90009', 2, 'Support renewal, yearly', 1, 12000);
