#!/bin/bash
set -euo pipefail
cd /app/repo
target=$(git log --format=%H --grep='^Bump version to 1\.2\.0$' main)
git -c user.name="Oracle" -c user.email="oracle@example.com" tag -a v1.2.0 -m "Release 1.2.0" "$target"
git branch release-1.2 "$target"
