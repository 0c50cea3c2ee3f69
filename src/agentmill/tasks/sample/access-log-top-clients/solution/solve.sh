#!/bin/bash
set -euo pipefail
awk '$7 != "/healthz" { n[$1]++ } END { for (ip in n) print n[ip], ip }' /app/logs/access.log \
  | LC_ALL=C sort -k1,1nr -k2,2 | head -n 5 > /app/top_clients.txt
