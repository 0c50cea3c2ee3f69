#!/bin/bash
set -euo pipefail
# Entry lines start with "YYYY-MM-DD HH:MM:SS,mmm LEVEL"; continuation lines don't.
{
  echo 'hour,errors'
  grep -E '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2},[0-9]+ ERROR ' /app/logs/app.log \
    | cut -c1-13 | LC_ALL=C sort | uniq -c | awk '{ print $2 " " $3 ":00," $1 }'
} > /app/errors_per_hour.csv
