#!/bin/bash
set -euo pipefail
{
  echo 'id,name,email,city'
  jq -r 'map(select(.active == true)) | sort_by(.id) | .[]
         | [.id, .name, (.email // ""), .address.city] | @csv' /app/users.json
} > /app/active_users.csv
