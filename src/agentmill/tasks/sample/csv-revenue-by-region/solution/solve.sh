#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
from decimal import Decimal

totals = {}
with open("/app/data/sales.csv", newline="") as fh:
    for row in csv.DictReader(fh):
        amount = Decimal(row["quantity"]) * Decimal(row["unit_price"])
        totals[row["region"]] = totals.get(row["region"], Decimal(0)) + amount

with open("/app/data/region_revenue.csv", "w", newline="") as fh:
    out = csv.writer(fh, lineterminator="\n")
    out.writerow(["region", "revenue"])
    for region, total in sorted(totals.items(), key=lambda kv: -kv[1]):
        out.writerow([region, f"{total:.2f}"])
PY
