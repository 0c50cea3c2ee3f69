#!/bin/bash
set -euo pipefail
awk '
  /^```/ { infence = !infence; next }
  infence { next }
  /^###? / {
    level = (substr($0, 1, 3) == "###") ? 3 : 2
    title = $0; sub(/^#+[ \t]+/, "", title); sub(/[ \t]+$/, "", title)
    anchor = tolower(title); gsub(/[^a-z0-9 -]/, "", anchor); gsub(/ /, "-", anchor)
    printf "%s- [%s](#%s)\n", (level == 3 ? "  " : ""), title, anchor
  }
' /app/docs/GUIDE.md > /app/docs/TOC.md
