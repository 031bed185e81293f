#!/usr/bin/env bash
# Command 2 of the README: set up the development dependencies and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh "all,dev"
# Debian's chromium for the HTML report's browser test (driven by Playwright through its
# executable path; `playwright install` is never run). Idempotent: skipped when installed.
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing chromium (Debian) for the report's browser test"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get install -y --no-install-recommends chromium \
    || { $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends chromium; }
fi
echo "lint: ruff check, mypy --strict"
.venv/bin/ruff check src tests
.venv/bin/mypy src
# two workers (RECITATION_TEST_WORKERS; 0: none): the real-model tests in two groups, one
# per worker (tests/conftest.py), the other tests shared between them
exec .venv/bin/python -m pytest -n "${RECITATION_TEST_WORKERS:-2}" --dist loadgroup "$@"
