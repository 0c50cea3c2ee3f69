#!/bin/bash
set -euo pipefail
python3 - <<'PY'
path = "/app/statkit/stats.py"
src = open(path).read()
old = """    values.sort()
    mid = len(values) // 2
    return values[mid]
"""
new = """    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2
"""
assert old in src
open(path, "w").write(src.replace(old, new))
PY
