-- Task state over the gyms' base data.
UPDATE itsm_context SET value = 'USR0002' WHERE key = 'current_user';
UPDATE collab_context SET value = 'marcus.lindqvist@corvid-logistics.com' WHERE key = 'current_user';
