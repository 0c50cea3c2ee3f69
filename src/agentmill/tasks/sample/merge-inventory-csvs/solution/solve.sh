#!/bin/bash
set -euo pipefail
{
  echo 'sku,total_qty'
  awk -F, 'FNR > 1 { sub(/\r$/, ""); if ($1 != "") total[$1] += $2 } END { for (s in total) print s "," total[s] }' \
    /app/inventory/*.csv | LC_ALL=C sort
} > /app/inventory_total.csv
