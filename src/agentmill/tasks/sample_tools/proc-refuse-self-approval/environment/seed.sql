-- Task state over the gyms' base data.
UPDATE proc_context SET value = 'EMP0047' WHERE key = 'current_user';
INSERT INTO requisitions (id, title, requester_id, cost_centre_id, vendor_id, justification, needed_by, status, total, approver_id, decided_at, decision_note, created_at, updated_at) VALUES ('PR90012', 'Cleaning service for the Rotterdam HQ', 'EMP0047', 'CC-210', 'VEN018', 'Planned purchase', '2026-04-01', 'submitted', 3100, NULL, NULL, '', '2026-03-12T09:00:00Z', '2026-03-12T09:00:00Z');
INSERT INTO requisition_lines (requisition_id, line_no, description, quantity, unit_price) VALUES ('PR90012', 1, 'Monthly cleaning service', 1, 3100);
