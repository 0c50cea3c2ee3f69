-- Task state over the gyms' base data.
UPDATE proc_context SET value = 'EMP0074' WHERE key = 'current_user';
INSERT INTO requisitions (id, title, requester_id, cost_centre_id, vendor_id, justification, needed_by, status, total, approver_id, decided_at, decision_note, created_at, updated_at) VALUES ('PR90007', 'Forklift rental for the inventory count', 'EMP0148', 'CC-160', 'VEN009', 'Planned purchase', '2026-03-09', 'ordered', 2070, 'EMP0041', '2026-02-21T10:00:00Z', '', '2026-02-20T09:00:00Z', '2026-02-21T10:00:00Z');
INSERT INTO requisition_lines (requisition_id, line_no, description, quantity, unit_price) VALUES ('PR90007', 1, 'Forklift rental, one week', 3, 690);
INSERT INTO purchase_orders (id, requisition_id, vendor_id, buyer_id, status, total, issued_at, updated_at) VALUES ('PO900002', 'PR90007', 'VEN009', 'EMP0074', 'partially_received', 2070, '2026-02-23T09:00:00Z', '2026-02-23T09:00:00Z');
INSERT INTO po_lines (po_id, line_no, description, quantity, unit_price, received_qty) VALUES ('PO900002', 1, 'Forklift rental, one week', 3, 690, 2);
INSERT INTO goods_receipts (id, po_id, line_no, quantity, received_by, received_at, note) VALUES ('GR900001', 'PO900002', 1, 2, 'EMP0148', '2026-03-09T08:00:00Z', '');
UPDATE budgets SET committed = committed + 690, spent = spent + 1380 WHERE cost_centre_id = 'CC-160' AND year = 2026;
