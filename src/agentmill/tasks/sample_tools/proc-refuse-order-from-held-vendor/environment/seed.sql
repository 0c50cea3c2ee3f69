-- Task state over the gyms' base data.
UPDATE proc_context SET value = 'EMP0098' WHERE key = 'current_user';
INSERT INTO requisitions (id, title, requester_id, cost_centre_id, vendor_id, justification, needed_by, status, total, approver_id, decided_at, decision_note, created_at, updated_at) VALUES ('PR90014', 'Spring campaign artwork', 'EMP0090', 'CC-150', 'VEN019', 'Planned purchase', '2026-04-10', 'approved', 4800, 'EMP0062', '2026-02-21T10:00:00Z', '', '2026-02-20T09:00:00Z', '2026-02-21T10:00:00Z');
INSERT INTO requisition_lines (requisition_id, line_no, description, quantity, unit_price) VALUES ('PR90014', 1, 'Trade fair booth graphics', 2, 2400);
UPDATE budgets SET committed = committed + 4800, spent = spent + 0 WHERE cost_centre_id = 'CC-150' AND year = 2026;
