-- Task state over the gyms' base data.
UPDATE proc_context SET value = 'EMP0087' WHERE key = 'current_user';
