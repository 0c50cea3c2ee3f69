-- Task state over the gyms' base data.
UPDATE itsm_context SET value = 'USR0004' WHERE key = 'current_user';
