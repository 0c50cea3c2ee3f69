#!/bin/bash
set -euo pipefail
cat > /app/extstats.sh <<'SH'
#!/bin/bash
# extstats.sh DIR - per-extension file and line counts (hidden files/dirs skipped).
set -euo pipefail
dir=${1:?usage: extstats.sh DIR}
find "$dir" -mindepth 1 -name '.*' -prune -o -type f -print0 |
  while IFS= read -r -d '' f; do
    base=${f##*/}
    case $base in
      *.*) ext=${base##*.}; ext=${ext,,} ;;
      *) ext='(none)' ;;
    esac
    printf '%s %s\n' "$ext" "$(wc -l < "$f")"
  done |
  awk '{ files[$1]++; lines[$1] += $2 } END { for (e in files) print e, files[e], lines[e] }' |
  LC_ALL=C sort
SH
chmod +x /app/extstats.sh
