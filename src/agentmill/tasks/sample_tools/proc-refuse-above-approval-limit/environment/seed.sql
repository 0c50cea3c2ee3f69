-- Task state over the gyms' base data.
UPDATE proc_context SET value = 'EMP0043' WHERE key = 'current_user';
INSERT INTO requisitions (id, title, requester_id, cost_centre_id, vendor_id, justification, needed_by, status, total, approver_id, decided_at, decision_note, created_at, updated_at) VALUES ('PR90013', 'Test devices for the mobile app', 'EMP0245', 'CC-200', 'VEN001', 'Planned purchase', '2026-04-15', 'submitted', 32100, NULL, NULL, '', '2026-03-12T09:00:00Z', '2026-03-12T09:00:00Z');
INSERT INTO requisition_lines (requisition_id, line_no, description, quantity, unit_price) VALUES ('PR90013', 1, 'Laptop 14in, 32 GB', 20, 1450);
INSERT INTO requisition_lines (requisition_id, line_no, description, quantity, unit_price) VALUES ('PR90013', 2, 'Docking station', 12, 210);
INSERT INTO requisition_lines (requisition_id, line_no, description, quantity, unit_price) VALUES ('PR90013', 3, '27in monitor', 2, 290);
