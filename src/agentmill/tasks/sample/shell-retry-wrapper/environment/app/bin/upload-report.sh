#!/bin/sh
# Pretend upload that fails twice, then works (state kept in /tmp/upload-attempts).
n=$(cat /tmp/upload-attempts 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > /tmp/upload-attempts
if [ "$n" -lt 3 ]; then
  echo "upload failed: connection reset" >&2
  exit 75
fi
echo "uploaded $1"
