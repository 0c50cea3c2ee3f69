#!/bin/bash
set -euo pipefail
awk '
  function trim(s) { sub(/^[ \t\r]+/, "", s); sub(/[ \t\r]+$/, "", s); return s }
  { line = trim($0) }
  line == "" || line ~ /^[;#]/ { next }
  line ~ /^\[.*\]$/ { section = substr(line, 2, length(line) - 2); next }
  {
    eq = index(line, "=")
    key = trim(substr(line, 1, eq - 1)); val = trim(substr(line, eq + 1))
    name = toupper(section "_" key); gsub(/[^A-Z0-9]/, "_", name)
    print name "=" val
  }
' /app/config/settings.ini > /app/config/app.env
