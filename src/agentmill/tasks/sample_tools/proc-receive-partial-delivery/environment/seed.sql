-- Task state over the gyms' base data.
UPDATE proc_context SET value = 'EMP0153' WHERE key = 'current_user';
INSERT INTO requisitions (id, title, requester_id, cost_centre_id, vendor_id, justification, needed_by, status, total, approver_id, decided_at, decision_note, created_at, updated_at) VALUES ('PR90006', 'Workwear for the Gdansk night shift', 'EMP0153', 'CC-210', 'VEN011', 'Planned purchase', '2026-03-20', 'ordered', 1210, 'EMP0047', '2026-03-03T10:00:00Z', '', '2026-03-02T09:00:00Z', '2026-03-03T10:00:00Z');
INSERT INTO requisition_lines (requisition_id, line_no, description, quantity, unit_price) VALUES ('PR90006', 1, 'Safety boots', 10, 89);
INSERT INTO requisition_lines (requisition_id, line_no, description, quantity, unit_price) VALUES ('PR90006', 2, 'Hi-vis jacket', 10, 32);
INSERT INTO purchase_orders (id, requisition_id, vendor_id, buyer_id, status, total, issued_at, updated_at) VALUES ('PO900001', 'PR90006', 'VEN011', 'EMP0066', 'issued', 1210, '2026-03-04T09:00:00Z', '2026-03-04T09:00:00Z');
INSERT INTO po_lines (po_id, line_no, description, quantity, unit_price, received_qty) VALUES ('PO900001', 1, 'Safety boots', 10, 89, 0);
INSERT INTO po_lines (po_id, line_no, description, quantity, unit_price, received_qty) VALUES ('PO900001', 2, 'Hi-vis jacket', 10, 32, 0);
UPDATE budgets SET committed = committed + 1210, spent = spent + 0 WHERE cost_centre_id = 'CC-210' AND year = 2026;
