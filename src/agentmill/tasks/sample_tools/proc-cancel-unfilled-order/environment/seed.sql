-- Task state over the gyms' base data.
UPDATE proc_context SET value = 'EMP0066' WHERE key = 'current_user';
INSERT INTO requisitions (id, title, requester_id, cost_centre_id, vendor_id, justification, needed_by, status, total, approver_id, decided_at, decision_note, created_at, updated_at) VALUES ('PR90008', 'Brochure print run for the spring fair', 'EMP0090', 'CC-150', 'VEN013', 'Planned purchase', '2026-04-02', 'ordered', 3600, 'EMP0062', '2026-03-06T10:00:00Z', '', '2026-03-05T09:00:00Z', '2026-03-06T10:00:00Z');
INSERT INTO requisition_lines (requisition_id, line_no, description, quantity, unit_price) VALUES ('PR90008', 1, 'Brochure print run, 2,000', 2, 1800);
INSERT INTO purchase_orders (id, requisition_id, vendor_id, buyer_id, status, total, issued_at, updated_at) VALUES ('PO900003', 'PR90008', 'VEN013', 'EMP0066', 'issued', 3600, '2026-03-09T09:00:00Z', '2026-03-09T09:00:00Z');
INSERT INTO po_lines (po_id, line_no, description, quantity, unit_price, received_qty) VALUES ('PO900003', 1, 'Brochure print run, 2,000', 2, 1800, 0);
UPDATE budgets SET committed = committed + 3600, spent = spent + 0 WHERE cost_centre_id = 'CC-150' AND year = 2026;
