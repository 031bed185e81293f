#!/usr/bin/env bash
# Command 1 of the README: set everything up and run the demo audit (the embedded model and
# the quick model organism, a positive control).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh local,detect,report
exec .venv/bin/recitation demo "$@"
