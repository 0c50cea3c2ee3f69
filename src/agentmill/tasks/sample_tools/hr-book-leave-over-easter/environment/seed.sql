-- Task state over the gyms' base data.
UPDATE hr_context SET value = 'EMP0146' WHERE key = 'current_user';
