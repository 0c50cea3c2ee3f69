-- Task state over the gyms' base data.
UPDATE hr_context SET value = 'EMP0212' WHERE key = 'current_user';
UPDATE leave_balances SET used_days = used_days + 14, pending_days = pending_days + 0 WHERE employee_id = 'EMP0212' AND leave_type = 'annual' AND year = 2026;
