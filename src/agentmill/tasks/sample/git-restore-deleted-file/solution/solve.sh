#!/bin/bash
set -euo pipefail
cd /app/repo
del=$(git log --format=%H -n 1 --diff-filter=D -- config/defaults.yaml)
git checkout "$del^" -- config/defaults.yaml
git -c user.name="Oracle" -c user.email="oracle@example.com" commit -q -m "Restore config/defaults.yaml"
