#!/bin/bash
set -euo pipefail
python3 - <<'PY'
path = "/app/shop/cart.py"
src = open(path).read()
src = src.replace("def __init__(self, owner, items=[], discounts={}):",
                  "def __init__(self, owner, items=None, discounts=None):")
src = src.replace("self.items = items\n", "self.items = items if items is not None else []\n")
src = src.replace("self.discounts = discounts\n", "self.discounts = discounts if discounts is not None else {}\n")
open(path, "w").write(src)
PY
