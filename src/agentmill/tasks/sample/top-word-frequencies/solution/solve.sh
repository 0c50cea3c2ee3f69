#!/bin/bash
set -euo pipefail
tr -cs 'A-Za-z' '\n' < /app/essay.txt | tr 'A-Z' 'a-z' | grep -v '^$' \
  | LC_ALL=C sort | uniq -c | awk '{print $1, $2}' \
  | LC_ALL=C sort -k1,1nr -k2,2 | head -n 10 > /app/top_words.txt
