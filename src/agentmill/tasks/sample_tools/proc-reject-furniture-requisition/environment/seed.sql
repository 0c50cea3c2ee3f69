-- Task state over the gyms' base data.
UPDATE proc_context SET value = 'EMP0045' WHERE key = 'current_user';
INSERT INTO requisitions (id, title, requester_id, cost_centre_id, vendor_id, justification, needed_by, status, total, approver_id, decided_at, decision_note, created_at, updated_at) VALUES ('PR90003', 'Standing desks for the sales floor', 'EMP0164', 'CC-140', 'VEN016', 'Planned purchase', '2026-04-15', 'submitted', 2160, NULL, NULL, '', '2026-03-12T09:00:00Z', '2026-03-12T09:00:00Z');
INSERT INTO requisition_lines (requisition_id, line_no, description, quantity, unit_price) VALUES ('PR90003', 1, 'Standing desk', 3, 720);
