-- Task state over the gyms' base data.
UPDATE itsm_context SET value = 'USR0010' WHERE key = 'current_user';
UPDATE collab_context SET value = 'diego.herrera@corvid-logistics.com' WHERE key = 'current_user';
