#!/bin/bash
set -euo pipefail
cd /app/book
for f in ch*.md; do
  if [[ $f =~ ^ch([0-9]+)\.md$ ]]; then
    mv -- "$f" "$(printf 'chapter-%02d.md' "$((10#${BASH_REMATCH[1]}))")"
  fi
done
