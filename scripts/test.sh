#!/usr/bin/env bash
# Command 2 of the README: set up the development dependencies and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh "all,dev"
echo "lint: ruff check, mypy --strict"
.venv/bin/ruff check src tests
.venv/bin/mypy src
exec .venv/bin/python -m pytest "$@"
