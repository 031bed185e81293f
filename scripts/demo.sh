#!/usr/bin/env bash
# Command 1 of the README: set everything up and run the demo audit on the embedded model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh local
exec .venv/bin/recitation demo "$@"
