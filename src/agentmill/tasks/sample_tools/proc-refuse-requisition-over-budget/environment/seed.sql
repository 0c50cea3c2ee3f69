-- Task state over the gyms' base data.
UPDATE proc_context SET value = 'EMP0255' WHERE key = 'current_user';
INSERT INTO requisitions (id, title, requester_id, cost_centre_id, vendor_id, justification, needed_by, status, total, approver_id, decided_at, decision_note, created_at, updated_at) VALUES ('PR90015', 'Laptops for the buying team', 'EMP0255', 'CC-190', 'VEN001', 'Planned purchase', '2026-04-30', 'draft', 17400, NULL, NULL, '', '2026-03-13T09:00:00Z', '2026-03-13T09:00:00Z');
INSERT INTO requisition_lines (requisition_id, line_no, description, quantity, unit_price) VALUES ('PR90015', 1, 'Laptop 14in, 32 GB', 12, 1450);
