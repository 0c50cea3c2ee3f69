#!/bin/bash
set -euo pipefail
log=/app/logs/auth.log
grep -oE 'Accepted .* from [0-9.]+ ' "$log" | awk '{print $(NF)}' | sort -u > /tmp/allowed
grep -oE 'Failed password for (invalid user )?[^ ]+ from [0-9.]+ ' "$log" | awk '{print $NF}' \
  | sort | uniq -c | awk '$1 >= 3 {print $2}' | grep -vxF -f /tmp/allowed \
  | sort -t. -k1,1n -k2,2n -k3,3n -k4,4n > /app/blocklist.txt
