-- Task state over the gyms' base data.
UPDATE itsm_context SET value = 'USR0027' WHERE key = 'current_user';
