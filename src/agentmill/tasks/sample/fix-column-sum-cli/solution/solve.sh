#!/bin/bash
set -euo pipefail
python3 - <<'PY'
path = "/app/tools/colsum.py"
src = open(path).read()
src = src.replace('header = fh.readline().split(",")', 'header = [h.strip() for h in fh.readline().split(",")]')
src = src.replace("total += float(cells[idx])",
                  "value = cells[idx].strip() if idx < len(cells) else \"\"\n            total += float(value) if value else 0.0")
open(path, "w").write(src)
PY
