#!/usr/bin/env bash
# The lint and type gate (seconds): ruff's lint rules and formatting over the code, and mypy over the
# whole package ([tool.mypy] in pyproject.toml; the bundled tasks and tool gyms left out: task content).
set -euo pipefail
cd "$(dirname "$0")/.."
paths=(src tests benchmarks scripts examples)
.venv/bin/ruff check -q "${paths[@]}"
.venv/bin/ruff format -q --check "${paths[@]}"
.venv/bin/mypy
echo "lint: ruff and mypy clean"
