#!/bin/bash
set -euo pipefail
cd /app/downloads
for f in *; do
  [ -f "$f" ] || continue
  case "$f" in
    *.*) ext="${f##*.}"; ext="${ext,,}" ;;
    *) ext=misc ;;
  esac
  mkdir -p "$ext"
  mv -- "$f" "$ext/"
done
