-- Task state over the gyms' base data.
UPDATE hr_context SET value = 'EMP0226' WHERE key = 'current_user';
