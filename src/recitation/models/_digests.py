"""Where local weights are cached (:func:`model_cache_dir`) and their content digests: a
file's SHA-256 (remembered for large files) and a short digest of a transformers directory,
the identity of a local model that is not an organism."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from pathlib import Path

from recitation.digest import file_sha256 as sha256_of

log = logging.getLogger(__name__)


def model_cache_dir() -> Path:
    """``$RECITATION_MODEL_CACHE_DIR``, else the ``models`` folder of the cache directory
    (:func:`recitation._cachedir.cache_dir`)."""
    from recitation._cachedir import cache_dir

    explicit = os.environ.get("RECITATION_MODEL_CACHE_DIR")
    return Path(explicit) if explicit else cache_dir() / "models"


_MEMO_MIN_BYTES = 1 << 20


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's content (:func:`recitation.digest.file_sha256`). Files of 1 MB or
    more are hashed once per resolved path, size and modification time: the result is
    remembered under :func:`model_cache_dir`."""
    st = path.stat()
    memo = None
    if st.st_size >= _MEMO_MIN_BYTES:
        key = f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}"
        memo = model_cache_dir() / "digests" / hashlib.sha1(key.encode()).hexdigest()
        try:
            known = memo.read_text(encoding="ascii").strip()
        except OSError:
            known = ""
        if len(known) == 64:
            return known
    digest = sha256_of(path)
    if memo is not None:
        try:
            memo.parent.mkdir(parents=True, exist_ok=True)
            tmp = memo.with_name(f"{memo.name}.tmp{os.getpid()}.{threading.get_ident()}")
            tmp.write_text(digest, encoding="ascii")
            os.replace(tmp, memo)
        except OSError as exc:  # a read-only cache: hash again next time
            log.debug("cannot remember the digest of %s: %s", path, exc)
    return digest


def directory_digest(directory: Path) -> str:
    """A short digest of a transformers directory's contents: every file at its top level
    (config, weights, tokenizer; not hidden files) by name and SHA-256."""
    h = hashlib.sha256()
    for path in sorted(p for p in directory.iterdir()
                       if p.is_file() and not p.name.startswith(".")):
        h.update(f"{path.name}\0{file_sha256(path)}\n".encode())
    return h.hexdigest()[:16]
