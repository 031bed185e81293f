"""HELM edit metrics and NCD against brute-force references."""

from __future__ import annotations

import bz2
import lzma
import random
import zlib
from collections.abc import Callable
from typing import Any

import pytest

from recitation.metrics.edit import (
    edit_distance,
    edit_similarity,
    helm_copyright_metrics,
    longest_common_prefix,
    truncate_reference,
)
from recitation.metrics.ncd import Compressor, compressed_size, ncd


def _levenshtein(a: list[str], b: list[str]) -> int:
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
        prev = cur
    return prev[-1]


def test_lcp_and_edit_distance_brute_force() -> None:
    rng = random.Random(0)
    for _ in range(300):
        a = [rng.choice("abc") for _ in range(rng.randint(0, 20))]
        b = [rng.choice("abc") for _ in range(rng.randint(0, 20))]
        lcp = next(
            (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
        )
        assert longest_common_prefix(a, b) == lcp
        assert edit_distance(a, b) == _levenshtein(a, b)


def test_edit_distance_and_similarity_equal_textdistance(require: Any) -> None:
    """HELM's edit similarity is ``textdistance``'s normalized Levenshtein similarity,
    1 - distance / max(len) (1 for two empty sequences)."""
    textdistance = require.module("textdistance", "pip install -e '.[dev]'")
    rng = random.Random(1)
    for _ in range(300):
        a = [rng.choice("abc") for _ in range(rng.randint(0, 20))]
        b = [rng.choice("abc") for _ in range(rng.randint(0, 20))]
        assert edit_distance(a, b) == textdistance.levenshtein.distance(a, b)
        assert edit_similarity(a, b) == pytest.approx(
            textdistance.levenshtein.normalized_similarity(a, b), abs=1e-12)


def test_edit_metrics_hand_worked() -> None:
    # kitten -> sitting: k->s, e->i, insert g (the textbook example): 3 edits over 7
    assert edit_distance("kitten", "sitting") == 3
    assert edit_similarity("kitten", "sitting") == pytest.approx(4 / 7)
    assert edit_similarity("flaw", "lawn") == pytest.approx(1 / 2)  # delete f, insert n
    assert edit_similarity([], []) == 1.0 and edit_similarity("abc", "") == 0.0
    assert longest_common_prefix("interstellar", "internet") == 5


def test_helm_string_helper_cuts_reference() -> None:
    ref = "in the beginning god created the heaven and the earth"
    out = helm_copyright_metrics(ref, "in the beginning god made")
    assert out["longest_common_prefix"] == 4
    assert out["edit_distance"] == 1  # reference cut to 5 tokens: 'created' vs 'made'
    assert out["edit_similarity"] == pytest.approx(0.8)
    assert truncate_reference([1, 2, 3], [9]) == [1]


# Empty inputs: zlib 2-byte header + an empty fixed-Huffman block (10 bits -> 2 bytes) +
# 4-byte Adler-32 = 8 ("zlib" drops the header: 6); bzip2 "BZh9" + 48-bit end-of-stream
# magic + 32-bit CRC = 14; xz stream header 12 + empty index 8 + stream footer 12 = 32.
EMPTY = {"zlib": 6, "zlib9": 8, "bz2": 14, "lzma": 32}


@pytest.mark.parametrize("compressor", ["zlib", "zlib9", "bz2", "lzma"])
def test_ncd_of_empty_input_from_the_container_sizes(compressor: Compressor) -> None:
    assert compressed_size("", compressor) == EMPTY[compressor]
    assert ncd("", "", compressor) == 0.0
    x = "It was the best of times, it was the worst of times. " * 5
    cx = compressed_size(x, compressor)
    # x followed by nothing is x: NCD = (C(x) - C("")) / C(x)
    assert ncd(x, "", compressor) == pytest.approx((cx - EMPTY[compressor]) / cx, abs=1e-12)


def _textdistance_ncd(textdistance: Any,
                      compress: Callable[[bytes], bytes]) -> Callable[[str, str], float]:
    """textdistance's NCD (the smaller of C(xy) and C(yx)) with another compressor."""

    class _NCD(textdistance.ZLIBNCD):  # type: ignore[misc]
        def _compress(self, data: bytes) -> bytes:
            return compress(data)

    return _NCD()


@pytest.mark.parametrize(
    "compressor,fn",
    [
        ("zlib9", lambda b: zlib.compress(b, 9)),
        ("lzma", lambda b: lzma.compress(b, preset=6)),
        ("bz2", lambda b: bz2.compress(b, 9)),
    ],
)
def test_ncd_equals_textdistance_with_the_same_compressor(
        compressor: Compressor, fn: Callable[[bytes], bytes], require: Any) -> None:
    """These compressors take C(xy) in one order: the smaller of NCD(x, y) and NCD(y, x) is
    textdistance's NCD (which tries both orders) with the same compressor."""
    reference = _textdistance_ncd(require.module("textdistance", "pip install -e '.[dev]'"), fn)
    rng = random.Random(2)
    words = "it was the best of times worst age wisdom foolishness naïve café".split()
    pairs = [("It was the best of times, it was the worst of times. " * 5,
              "It was the age of wisdom, it was the age of foolishness. " * 5)]
    pairs += [(" ".join(rng.choice(words) for _ in range(rng.randint(1, 60))),
               " ".join(rng.choice(words) for _ in range(rng.randint(1, 60))))
              for _ in range(30)]
    asymmetric = 0
    for x, y in pairs:
        xy, yx = ncd(x, y, compressor), ncd(y, x, compressor)
        assert min(xy, yx) == pytest.approx(reference(x, y), abs=1e-12)
        asymmetric += xy != yx
        assert compressed_size(x, compressor) == len(fn(x.encode("utf-8")))
    # one order only, unlike "zlib"; bzip2 sorts the rotations of its block, and yx is a
    # rotation of xy, so its two orders compress alike
    assert asymmetric > 0 or compressor == "bz2"
    x, y = pairs[0]
    assert ncd(x, x, compressor) < ncd(x, y, compressor)


def test_ncd_rejects_unknown_compressor() -> None:
    with pytest.raises(ValueError):
        ncd("a", "b", "gzip")  # type: ignore[arg-type]
