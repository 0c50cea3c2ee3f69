#!/bin/bash
set -euo pipefail
cd /app/photos
: > /tmp/removed.unsorted
declare -A seen
while IFS= read -r line; do
  hash=${line%% *}
  name=${line#*  }
  if [[ -n ${seen[$hash]:-} ]]; then
    rm -- "$name"
    printf '%s\n' "$name" >> /tmp/removed.unsorted
  else
    seen[$hash]=1
  fi
done < <(LC_ALL=C ls -1 | LC_ALL=C sort | tr '\n' '\0' | xargs -0 sha256sum)
LC_ALL=C sort /tmp/removed.unsorted > /app/removed.txt
