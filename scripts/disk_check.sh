#!/usr/bin/env bash
# Free disk for the whole cold test run, checked before anything is installed. The run writes
# the virtual environment here (.venv), models and organisms in the cache
# (RECITATION_CACHE_DIR, default ~/.cache/recitation) and checkpoints in the temporary folder
# (TMPDIR, default /tmp); docs/developing.md gives the measured sizes. Below the need: a
# warning naming the folders. Below the hard minimum (pip alone cannot finish): an error.
set -euo pipefail
cd "$(dirname "$0")/.."
NEED_GB="${RECITATION_DISK_NEED_GB:-15}"
MIN_GB="${RECITATION_DISK_MIN_GB:-4}"
CACHE="${RECITATION_CACHE_DIR:-$HOME/.cache/recitation}"
TMP="${TMPDIR:-/tmp}"
mkdir -p "$CACHE"
low=""; short=""
while read -r dir; do
  free_kb=$(df --output=avail -k "$dir" | tail -1)
  free_gb=$((free_kb / 1048576))
  echo "disk: ${free_gb} GiB free for $dir"
  [ "$free_gb" -lt "$NEED_GB" ] && low="$low $dir"
  [ "$free_gb" -lt "$MIN_GB" ] && short="$short $dir"
done < <(for d in . "$CACHE" "$TMP"; do echo "$(df --output=target "$d" | tail -1)"; done | sort -u)
if [ -n "$short" ]; then
  echo "error: under ${MIN_GB} GiB free on:$short. The whole test run needs about" \
       "${NEED_GB} GiB (the .venv, the model cache, the checkpoints in the temporary folder)." \
       "Free space there, or point RECITATION_CACHE_DIR and TMPDIR at a disk with room." >&2
  exit 1
fi
if [ -n "$low" ]; then
  echo "warning: under ${NEED_GB} GiB free on:$low; the whole test run needs about that much" \
       "and may fail part-way with 'No space left on device'. Free space there, or point" \
       "RECITATION_CACHE_DIR and TMPDIR at a disk with room." >&2
fi
