"""HELM edit metrics and NCD against brute-force references."""

from __future__ import annotations

import bz2
import lzma
import random
import zlib

import pytest

from recitation.metrics.edit import (
    edit_distance,
    edit_similarity,
    helm_copyright_metrics,
    longest_common_prefix,
    truncate_reference,
)
from recitation.metrics.ncd import compressed_size, ncd


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
        if a or b:
            assert edit_similarity(a, b) == pytest.approx(
                1 - _levenshtein(a, b) / max(len(a), len(b))
            )


def test_helm_string_helper_cuts_reference() -> None:
    ref = "in the beginning god created the heaven and the earth"
    out = helm_copyright_metrics(ref, "in the beginning god made")
    assert out["longest_common_prefix"] == 4
    assert out["edit_distance"] == 1  # reference cut to 5 tokens: 'created' vs 'made'
    assert out["edit_similarity"] == pytest.approx(0.8)
    assert truncate_reference([1, 2, 3], [9]) == [1]


@pytest.mark.parametrize(
    "compressor,fn",
    [
        ("zlib9", lambda b: zlib.compress(b, 9)),
        ("lzma", lambda b: lzma.compress(b)),
        ("bz2", lambda b: bz2.compress(b, 9)),
    ],
)
def test_ncd_formula(compressor: str, fn: object) -> None:
    x = "It was the best of times, it was the worst of times. " * 5
    y = "It was the age of wisdom, it was the age of foolishness. " * 5
    cx, cy, cxy = (len(fn(s.encode())) for s in (x, y, x + y))  # type: ignore[operator]
    assert ncd(x, y, compressor) == pytest.approx((cxy - min(cx, cy)) / max(cx, cy))  # type: ignore[arg-type]
    assert compressed_size(x, compressor) == cx  # type: ignore[arg-type]
    assert ncd(x, x, compressor) < ncd(x, y, compressor)  # type: ignore[arg-type]


def test_ncd_rejects_unknown_compressor() -> None:
    with pytest.raises(ValueError):
        ncd("a", "b", "gzip")  # type: ignore[arg-type]
