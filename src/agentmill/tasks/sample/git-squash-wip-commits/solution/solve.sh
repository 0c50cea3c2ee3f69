#!/bin/bash
set -euo pipefail
cd /app/repo
git checkout -q feature/csv-export
git reset -q --soft main
git -c user.name="Oracle" -c user.email="oracle@example.com" commit -q -m "Add CSV export"
