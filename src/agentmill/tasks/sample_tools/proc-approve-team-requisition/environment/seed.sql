-- Task state over the gyms' base data.
UPDATE proc_context SET value = 'EMP0041' WHERE key = 'current_user';
INSERT INTO requisitions (id, title, requester_id, cost_centre_id, vendor_id, justification, needed_by, status, total, approver_id, decided_at, decision_note, created_at, updated_at) VALUES ('PR90001', 'Euro pallets for the Hamburg depot', 'EMP0148', 'CC-160', 'VEN005', 'Planned purchase', '2026-03-27', 'submitted', 4600, NULL, NULL, '', '2026-03-13T10:00:00Z', '2026-03-13T10:00:00Z');
INSERT INTO requisition_lines (requisition_id, line_no, description, quantity, unit_price) VALUES ('PR90001', 1, 'Euro pallets, 100', 4, 1150);
INSERT INTO requisitions (id, title, requester_id, cost_centre_id, vendor_id, justification, needed_by, status, total, approver_id, decided_at, decision_note, created_at, updated_at) VALUES ('PR90002', 'Stretch film for Rotterdam', 'EMP0156', 'CC-160', 'VEN005', 'Planned purchase', '2026-04-03', 'submitted', 620, NULL, NULL, '', '2026-03-13T11:00:00Z', '2026-03-13T11:00:00Z');
INSERT INTO requisition_lines (requisition_id, line_no, description, quantity, unit_price) VALUES ('PR90002', 1, 'Stretch film, 24 rolls', 2, 310);
