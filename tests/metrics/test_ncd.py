"""NCD as the PEARL authors compute it: ``textdistance.zlib_ncd`` (zlib level 6, header
stripped, the smaller of C(xy) and C(yx))."""

from __future__ import annotations

import random
from typing import Any

import pytest

from recitation.metrics.ncd import compressed_size, ncd

PAIRS = [
    ("It was the best of times, it was the worst of times.",
     "It was the age of wisdom, it was the age of foolishness."),
    ("In the beginning God created the heaven and the earth.", "In the beginning God created"),
    ("", "not empty"),
    ("", ""),
    ("naïve café — ünïcödé", "naive cafe - unicode"),
    ("a" * 500, "b" * 3),
]


def _random_pairs(n: int) -> list[tuple[str, str]]:
    rng = random.Random(0)
    words = "the lord is my shepherd i shall not want he maketh me lie down in green".split()
    out = []
    for _ in range(n):
        a = " ".join(rng.choice(words) for _ in range(rng.randint(0, 80)))
        b = " ".join(rng.choice(words) for _ in range(rng.randint(0, 80)))
        out.append((a, b))
    return out


@pytest.mark.parametrize("x,y", PAIRS + _random_pairs(200))
def test_zlib_ncd_equals_textdistance(x: str, y: str, require: Any) -> None:
    textdistance = require.module("textdistance", "pip install -e '.[dev]'")
    assert ncd(x, y) == pytest.approx(textdistance.zlib_ncd(x, y), abs=1e-12)
    # the authors' performance: textdistance.zlib_ncd.normalized_similarity = 1 - NCD
    assert 1 - ncd(x, y) == pytest.approx(
        textdistance.zlib_ncd.normalized_similarity(x, y), abs=1e-12)


# Hand-worked from RFC 1950/1951, without textdistance: a short input without a repeated
# 3-byte string is one final fixed-Huffman block of 3 header bits, 8 bits per byte < 144
# (9 bits from 144 up: every byte of a UTF-8 multi-byte character) and a 7-bit end code,
# padded to whole bytes; zlib adds a 2-byte header ("zlib9" keeps it, "zlib" drops it) and a
# 4-byte Adler-32 checksum (both keep it). So with b the padded block: "zlib9" C = b + 6,
# "zlib" C = b + 4.
@pytest.mark.parametrize(
    "x,y,want,want9",
    [
        ("a", "b", 1 / 7, 1 / 9),  # a, b: 3 + 8 + 7 = 18 bits -> 3 bytes; ab: 26 -> 4
        ("a", "a", 1 / 7, 1 / 9),  # NCD(x, x) > 0: real compressors are not ideal
        ("ab", "c", 1 / 4, 1 / 5),  # ab: 4 bytes, c: 3, abc: 34 bits -> 5
        ("", "abc", 1 / 3, 3 / 11),  # "": 3 + 7 = 10 bits -> 2 bytes
        ("é", "a", 1 / 4, 1 / 5),  # é = C3 A9: 3 + 9 + 9 + 7 = 28 bits -> 4; éa: 36 -> 5
        ("", "", 0.0, 0.0),
    ],
)
def test_zlib_ncd_hand_worked(x: str, y: str, want: float, want9: float) -> None:
    """``want``: "zlib" (the default), ``want9``: "zlib9" (the earlier definition)."""
    assert ncd(x, y) == pytest.approx(want, abs=1e-12)
    assert ncd(y, x) == ncd(x, y)  # symmetric: both orders are tried
    assert ncd(x, y, "zlib9") == pytest.approx(want9, abs=1e-12)


def test_zlib_compressed_sizes_hand_worked() -> None:
    blocks = {"": 2, "a": 3, "ab": 4, "abc": 5, "é": 4}  # fixed-Huffman block bytes, above
    for text, b in blocks.items():
        assert compressed_size(text) == b + 4
        assert compressed_size(text, "zlib9") == b + 6
    assert compressed_size("é".encode()) == compressed_size("é")  # str is UTF-8 encoded
