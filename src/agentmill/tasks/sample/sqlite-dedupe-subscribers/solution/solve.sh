#!/bin/bash
set -euo pipefail
sqlite3 /app/newsletter.db <<'SQL'
BEGIN;
DELETE FROM subscribers
 WHERE id NOT IN (SELECT MIN(id) FROM subscribers GROUP BY lower(email));
UPDATE subscribers SET email = lower(email);
CREATE UNIQUE INDEX idx_subscribers_email ON subscribers(email);
COMMIT;
SQL
