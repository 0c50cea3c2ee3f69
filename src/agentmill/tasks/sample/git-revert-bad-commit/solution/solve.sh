#!/bin/bash
set -euo pipefail
cd /app/repo
bad=$(git log --format=%H --grep='^Tweak defaults for staging$' main)
git -c user.name="Oracle" -c user.email="oracle@example.com" revert --no-edit "$bad"
