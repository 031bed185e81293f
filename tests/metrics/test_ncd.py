"""NCD as the PEARL authors compute it: ``textdistance.zlib_ncd`` (zlib level 6, header
stripped, the smaller of C(xy) and C(yx))."""

from __future__ import annotations

import random
import zlib

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
def test_zlib_ncd_equals_textdistance(x: str, y: str) -> None:
    textdistance = pytest.importorskip("textdistance")
    assert ncd(x, y) == pytest.approx(textdistance.zlib_ncd(x, y), abs=1e-12)
    # the authors' performance: textdistance.zlib_ncd.normalized_similarity = 1 - NCD
    assert 1 - ncd(x, y) == pytest.approx(
        textdistance.zlib_ncd.normalized_similarity(x, y), abs=1e-12)


def test_zlib_ncd_definition_without_textdistance() -> None:
    x, y = PAIRS[0]
    c = [len(zlib.compress(s.encode(), 6)) - 2 for s in (x, y, x + y, y + x)]
    assert compressed_size(x) == c[0]
    assert ncd(x, y) == pytest.approx((min(c[2], c[3]) - min(c[0], c[1])) / max(c[0], c[1]))
    assert ncd(x, y) == ncd(y, x)  # symmetric: both orders are tried
    assert ncd("", "") == 0.0


def test_zlib9_keeps_the_earlier_definition() -> None:
    x, y = PAIRS[1]
    c = [len(zlib.compress(s.encode(), 9)) for s in (x, y, x + y)]
    assert ncd(x, y, "zlib9") == pytest.approx((c[2] - min(c[:2])) / max(c[:2]))
    assert ncd(x, y, "zlib9") != ncd(x, y)
