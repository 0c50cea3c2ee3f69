-- Task state over the gyms' base data.
UPDATE proc_context SET value = 'EMP0146' WHERE key = 'current_user';
