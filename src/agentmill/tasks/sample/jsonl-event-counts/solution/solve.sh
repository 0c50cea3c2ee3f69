#!/bin/bash
set -euo pipefail
total=$(grep -c '[^[:space:]]' /app/events.jsonl)
jq -R 'fromjson? | .type' /app/events.jsonl \
  | jq -s --argjson total "$total" \
      '{counts: (group_by(.) | map({key: .[0], value: length}) | from_entries), skipped: ($total - length)}' \
  > /app/event_counts.json
