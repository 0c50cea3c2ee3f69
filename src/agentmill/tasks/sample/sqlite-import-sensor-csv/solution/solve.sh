#!/bin/bash
set -euo pipefail
rm -f /app/sensors.db
sqlite3 /app/sensors.db <<'SQL'
CREATE TABLE readings (sensor TEXT, taken_at TEXT, celsius REAL);
.import --csv --skip 1 /app/readings.csv readings
UPDATE readings SET celsius = NULL WHERE celsius = '';
CREATE VIEW daily_max AS
  SELECT sensor, substr(taken_at, 1, 10) AS day, MAX(celsius) AS max_celsius
    FROM readings GROUP BY sensor, day;
SQL
