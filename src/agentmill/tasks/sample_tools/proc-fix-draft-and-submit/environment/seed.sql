-- Task state over the gyms' base data.
UPDATE proc_context SET value = 'EMP0023' WHERE key = 'current_user';
INSERT INTO requisitions (id, title, requester_id, cost_centre_id, vendor_id, justification, needed_by, status, total, approver_id, decided_at, decision_note, created_at, updated_at) VALUES ('PR90004', 'Laptops for two new desktop technicians', 'EMP0023', 'CC-110', 'VEN001', 'Planned purchase', '2026-04-06', 'draft', 3320, NULL, NULL, '', '2026-03-13T16:00:00Z', '2026-03-13T16:00:00Z');
INSERT INTO requisition_lines (requisition_id, line_no, description, quantity, unit_price) VALUES ('PR90004', 1, 'Laptop 14in, 32 GB', 2, 1450);
INSERT INTO requisition_lines (requisition_id, line_no, description, quantity, unit_price) VALUES ('PR90004', 2, 'Docking station', 2, 210);
