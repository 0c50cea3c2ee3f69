#!/usr/bin/env bash
# The lint and type gate (seconds): ruff's lint rules and formatting over the code, and mypy over the
# packages that are type-clean ([tool.mypy] files in pyproject.toml: a package joins once it passes).
set -euo pipefail
cd "$(dirname "$0")/.."
paths=(src tests benchmarks scripts examples)
.venv/bin/ruff check -q "${paths[@]}"
.venv/bin/ruff format -q --check "${paths[@]}"
.venv/bin/mypy
echo "lint: ruff and mypy clean"
