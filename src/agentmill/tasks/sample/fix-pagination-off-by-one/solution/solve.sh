#!/bin/bash
set -euo pipefail
python3 - <<'PY'
path = "/app/webapp/pagination.py"
src = open(path).read()
src = src.replace("total_pages = len(items) // per_page", "total_pages = (len(items) + per_page - 1) // per_page")
src = src.replace("start = page * per_page", "start = (page - 1) * per_page")
open(path, "w").write(src)
PY
