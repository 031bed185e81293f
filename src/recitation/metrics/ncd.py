"""Normalized compression distance (Cilibrasi & Vitanyi, 2005).

``NCD(x, y) = (C(xy) - min(C(x), C(y))) / max(C(x), C(y))`` where ``C`` is the compressed
length in bytes. Texts are UTF-8 encoded. Values are near 0 for identical inputs and near 1
(sometimes slightly above) for unrelated ones. Results depend on the compressor and its
settings:

* ``zlib`` (default) — as the PEARL authors compute it, with the ``textdistance`` package's
  ``zlib_ncd``: zlib at its default level 6, the 2-byte zlib header stripped (the 4-byte
  checksum kept), and ``C(xy)`` the smaller of ``C(xy)`` and ``C(yx)``; 0 when both
  compress to nothing.
* ``zlib9`` — our earlier definition: zlib level 9 with its header, ``C(xy)`` in one order.
* ``lzma`` (preset 6, the library default, ``.xz`` container) and ``bz2`` (level 9), in the
  ``zlib9`` form — the containers add constant headers, which matter for short texts.
"""

from __future__ import annotations

import bz2
import lzma
import zlib
from collections.abc import Callable
from typing import Literal

Compressor = Literal["zlib", "zlib9", "lzma", "bz2"]

_COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    "zlib": lambda b: zlib.compress(b, 6)[2:],
    "zlib9": lambda b: zlib.compress(b, 9),
    "lzma": lambda b: lzma.compress(b, preset=6),
    "bz2": lambda b: bz2.compress(b, 9),
}
_BOTH_ORDERS = frozenset({"zlib"})


def compressed_size(data: str | bytes, compressor: Compressor = "zlib") -> int:
    """Length in bytes of ``data`` compressed with ``compressor``."""
    try:
        fn = _COMPRESSORS[compressor]
    except KeyError:
        raise ValueError(
            f"unknown compressor {compressor!r}; use one of {sorted(_COMPRESSORS)}"
        ) from None
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return len(fn(raw))


def ncd(x: str | bytes, y: str | bytes, compressor: Compressor = "zlib") -> float:
    """Normalized compression distance between ``x`` and ``y``."""
    bx = x.encode("utf-8") if isinstance(x, str) else x
    by = y.encode("utf-8") if isinstance(y, str) else y
    cx = compressed_size(bx, compressor)
    cy = compressed_size(by, compressor)
    cxy = compressed_size(bx + by, compressor)
    if compressor in _BOTH_ORDERS:
        cxy = min(cxy, compressed_size(by + bx, compressor))
    if max(cx, cy) == 0:
        return 0.0
    return (cxy - min(cx, cy)) / max(cx, cy)
