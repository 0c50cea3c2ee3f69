#!/bin/bash
set -euo pipefail
sqlite3 -csv -header /app/library.db > /app/overdue.csv <<'SQL'
SELECT m.name AS member,
       b.title AS title,
       CAST(julianday('2024-06-30') - julianday(l.due_on) AS INTEGER) AS days_overdue
  FROM loans l
  JOIN members m ON m.id = l.member_id
  JOIN books b ON b.id = l.book_id
 WHERE l.returned_on IS NULL AND l.due_on < '2024-06-30'
 ORDER BY days_overdue DESC, member;
SQL
