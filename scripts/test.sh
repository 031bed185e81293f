#!/usr/bin/env bash
# Command 2 of the README: set up the development dependencies and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# The model runtime first (torch, transformers, the embedded model): enough to build the quick
# organism, which the whole suite's organism tests need. pip leaves a core idle, so for the
# whole suite (no pytest arguments) the organism is built (or found up to date) in the
# background while the rest installs and the linters run; the suite's `quick` fixture waits
# for it on the organism's lock, or builds it itself if that build failed (its log:
# .venv/organism-build.log). RECITATION_PREBUILD=0 turns this off.
# Disk first: a full disk fails pip or a checkpoint write long after the start, with an
# OSError that does not say what was short. The whole cold run needs about
# $RECITATION_DISK_NEED_GB GiB (docs/developing.md): say so before any of it is spent.
bash scripts/disk_check.sh
bash scripts/setup.sh "local"
PREBUILD=""
if [ $# -eq 0 ] && [ "${RECITATION_PREBUILD:-1}" != "0" ]; then
  echo "building the quick organism in the background (log: .venv/organism-build.log)"
  .venv/bin/python -m recitation.cli organism build --quick > .venv/organism-build.log 2>&1 &
  PREBUILD=$!
  # the vLLM environment of tests/models/test_vllm.py (made once, then kept), meanwhile
  echo "making the vLLM environment in the background (log: .venv/vllm-env.log)"
  bash scripts/vllm_env.sh > .venv/vllm-env.log 2>&1 &
  VLLM_ENV=$!
  trap '[ -n "$PREBUILD" ] && kill "$PREBUILD" "$VLLM_ENV" 2>/dev/null || true' EXIT
fi
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
.venv/bin/python -m pytest -n "${RECITATION_TEST_WORKERS:-2}" --dist loadgroup "$@"
