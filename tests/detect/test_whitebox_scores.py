"""Min-K%++ and Gap-K% at their call site (``whitebox_scores``), on small hand-made token
scores, fast (no model): the breaks a mutation run of detect/whitebox.py found, and the
named break of issue 46 (Min-K%++'s mean and spread swapped at the call site, caught before
only by a test that loads the real model). The references are brute force from the papers'
definitions: Min-K%++ (Zhang et al.) the mean of the lowest k% of ``(log p - mu) / sigma``,
Gap-K% (Kwak and Kim; the authors' wikimia.py) the same over the 3-token moving average of
``(log p - log p_top1) / sigma``; "the lowest c" found as the smallest mean over every subset
of c values (itertools.combinations), never by our sort."""

from __future__ import annotations

import itertools
import math
import zlib
from collections.abc import Sequence
from typing import Any

import pytest

from recitation.detect.whitebox import (
    WHITEBOX_DIRECTIONS,
    gap_k,
    min_k_ngram,
    min_k_percent,
    min_k_plus_plus,
    whitebox_scores,
)
from recitation.models.base import TokenScores

# Ten scored tokens; mu (the vocabulary mean of log p) is negative and sigma positive, as
# from any model, so (log p - sigma) / mu differs from (log p - mu) / sigma everywhere.
LPS = [-0.5, -3.0, -1.0, -6.0, -2.0, -0.25, -4.0, -1.5, -5.0, -2.5]
MU = [-4.0, -2.0, -3.0, -5.0, -1.0, -2.5, -6.0, -3.5, -2.0, -4.5]
SD = [2.0, 0.5, 1.0, 4.0, 0.25, 1.5, 2.5, 0.75, 3.0, 1.25]
TOP = [-0.25, -0.5, -0.75, -1.0, -0.1, -0.2, -0.3, -0.4, -0.6, -0.8]


def lowest_mean_brute(values: Sequence[float], k: float) -> float:
    """The mean of the lowest max(1, floor(n k / 100)) values: the smallest mean over every
    subset of that many (the papers' "k% of the tokens with the lowest scores")."""
    c = max(1, math.floor(len(values) * k / 100))
    return min(sum(sub) / c for sub in itertools.combinations(values, c))


def min_k_pp_paper(lps: Sequence[float], mu: Sequence[float], sd: Sequence[float],
                   k: float) -> float:
    return lowest_mean_brute([(lp - m) / s for lp, m, s in zip(lps, mu, sd, strict=True)], k)


def gap_k_paper(lps: Sequence[float], top: Sequence[float], sd: Sequence[float],
                k: float) -> float:
    gaps = [(lp - t) / s for lp, t, s in zip(lps, top, sd, strict=True)]
    smooth = [(gaps[i] + gaps[i + 1] + gaps[i + 2]) / 3 for i in range(len(gaps) - 2)]
    return lowest_mean_brute(smooth if len(gaps) >= 3 else gaps, k)


def _ts(lps: Sequence[float], mu: Sequence[float] | None = None,
        sd: Sequence[float] | None = None, top: Sequence[float] | None = None) -> TokenScores:
    return TokenScores(tuple(f"t{i}" for i in range(len(lps) + 1)), tuple(lps),
                       tuple(mu) if mu else None, tuple(sd) if sd else None,
                       top_logprob=tuple(top) if top else None)


def _scores(ts: TokenScores, text: str = "Alpha beta", **kw: Any) -> dict[str, float]:
    return {d.detector: d.score for d in whitebox_scores("s", text, ts, **kw)}


def test_min_k_pp_mu_and_sigma_swapped_at_the_call_site() -> None:
    """Issue 46's named break: whitebox_scores passing sigma for mu (and mu for sigma) to
    Min-K%++ changes every min_k_pp score here."""
    got = _scores(_ts(LPS, MU, SD, TOP))
    # by hand at k = 10% (1 of 10 tokens): the z-scores are 1.75, -2, 2, -0.25, -4, 1.5, 0.8,
    # 2.6666..., -1, 1.6; the lowest is (-2 - -1) / 0.25 = -4
    assert got["min_k_pp_10"] == pytest.approx(-4.0)
    for k in (10, 20, 30):
        assert got[f"min_k_pp_{k}"] == pytest.approx(min_k_pp_paper(LPS, MU, SD, k))
        swapped = lowest_mean_brute([(lp - s) / max(m, 1e-8)
                                     for lp, m, s in zip(LPS, MU, SD, strict=True)], k)
        assert abs(got[f"min_k_pp_{k}"] - swapped) > 1.0


def test_min_k_pp_at_the_call_site_is_each_k_of_the_paper() -> None:
    got = _scores(_ts(LPS, MU, SD, TOP))
    assert got["min_k_pp_20"] == pytest.approx((-4.0 - 2.0) / 2)  # by hand: -4 and -2
    assert got["min_k_pp_30"] == pytest.approx((-4.0 - 2.0 - 1.0) / 3)
    assert len({got["min_k_pp_10"], got["min_k_pp_20"], got["min_k_pp_30"]}) == 3


def test_gap_k_at_the_call_site_is_the_paper_with_top_and_sigma_in_place() -> None:
    got = _scores(_ts(LPS, MU, SD, TOP))
    for k in (10, 20, 30):
        assert got[f"gap_k_{k}"] == pytest.approx(gap_k_paper(LPS, TOP, SD, k))
        assert got[f"gap_k_{k}"] != pytest.approx(gap_k_paper(LPS, MU, SD, k))  # mu for top
        assert got[f"gap_k_{k}"] != pytest.approx(gap_k_paper(LPS, SD, TOP, k))  # swapped
    assert got["gap_k_20"] != pytest.approx(got["gap_k_30"])  # 8 windows: 1, 1 and 2 lowest


def test_each_score_needs_its_own_statistics() -> None:
    """Min-K%++ needs mu and sigma, Gap-K% the top token and sigma: each is computed exactly
    when the backend gives what it needs."""
    names = {"min_k_pp_10", "min_k_pp_20", "min_k_pp_30"}
    gaps = {"gap_k_10", "gap_k_20", "gap_k_30"}
    assert names | gaps <= set(_scores(_ts(LPS, MU, SD, TOP)))
    assert not (names | gaps) & set(_scores(_ts(LPS)))
    assert not names & set(_scores(_ts(LPS, MU, None, TOP)))
    assert not names & set(_scores(_ts(LPS, None, SD, TOP)))
    assert names <= set(_scores(_ts(LPS, MU, SD, None)))
    assert not gaps & set(_scores(_ts(LPS, MU, SD, None)))
    assert not gaps & set(_scores(_ts(LPS, MU, None, TOP)))
    assert gaps <= set(_scores(_ts(LPS, None, SD, TOP)))


def test_every_score_has_its_direction_and_the_sample_id() -> None:
    ds = whitebox_scores("s7", "Alpha beta", _ts(LPS, MU, SD, TOP), _ts(LPS), _ts(LPS))
    assert {d.detector for d in ds} == set(WHITEBOX_DIRECTIONS)
    for d in ds:
        assert d.sample_id == "s7"
        assert d.higher_means_member is WHITEBOX_DIRECTIONS[d.detector]
        assert type(d.score) is float
    # the published directions: lower NLL is member-like, higher Min-K%(++)/Gap-K% too
    assert [n for n, up in WHITEBOX_DIRECTIONS.items() if not up] == ["loss", "zlib",
                                                                     "reference"]


def test_the_ngram_option_adds_windowed_min_k_only_above_one() -> None:
    got = _scores(_ts(LPS), ngram=2)
    windows = [(LPS[i] + LPS[i + 1]) / 2 for i in range(len(LPS) - 1)]  # 9 windows
    for k in (10, 20, 30):
        assert got[f"min_k_{k}_ngram2"] == pytest.approx(lowest_mean_brute(windows, k))
        assert got[f"min_k_{k}"] == pytest.approx(lowest_mean_brute(LPS, k))
    assert not any("ngram" in n for n in _scores(_ts(LPS), ngram=1))
    ds = whitebox_scores("s", "Alpha beta", _ts(LPS), ngram=3)
    assert all(d.higher_means_member for d in ds if "ngram" in d.detector)


def test_loss_zlib_lowercase_and_reference_at_the_call_site() -> None:
    text = "Alpha Beta Gamma"
    nll = -sum(LPS) / len(LPS)
    got = _scores(_ts(LPS), text, lowercase=_ts([-2.0, -6.0]), reference=_ts([-1.0]))
    assert got["loss"] == pytest.approx(nll)
    assert got["zlib"] == pytest.approx(nll / len(zlib.compress(text.encode("utf-8"))))
    assert got["lowercase"] == pytest.approx(4.0 / nll)
    assert got["reference"] == pytest.approx(nll - 1.0)
    assert "lowercase" not in _scores(_ts(LPS)) and "reference" not in _scores(_ts(LPS))
    # a perfectly predicted text: NLL 0; the ratio's denominator is floored, not a division
    # by zero
    assert _scores(_ts([0.0]), lowercase=_ts([-1.0]))["lowercase"] == pytest.approx(1e8)


def test_zlib_counts_utf8_bytes() -> None:
    text = "é" * 40  # two UTF-8 bytes each
    want = -sum(LPS) / len(LPS) / len(zlib.compress(text.encode("utf-8")))
    assert _scores(_ts(LPS), text)["zlib"] == pytest.approx(want)


def test_the_lowest_k_percent_is_the_floor_but_at_least_one() -> None:
    for n in (1, 2, 4, 5, 9, 10, 11):
        vals = LPS[:n] if n <= len(LPS) else LPS + [-7.0]
        for k in (10, 20, 30, 50, 100):
            assert min_k_percent(vals, k) == pytest.approx(lowest_mean_brute(vals, k))
    with pytest.raises(ValueError, match=r"^no scored tokens \(a text needs at least two "
                       r"tokens\)$"):
        min_k_percent([], 20)


def test_min_k_pp_by_the_paper_and_its_floors() -> None:
    for k in (10, 20, 30, 50, 100):
        assert min_k_plus_plus(LPS, MU, SD, k) == pytest.approx(min_k_pp_paper(LPS, MU, SD, k))
    # sigma 0 (a one-hot distribution) is floored at 1e-8, not a division by zero
    assert min_k_plus_plus([-1.0], [-3.0], [0.0], 100) == pytest.approx(2.0 / 1e-8)
    with pytest.raises(ValueError, match="^logprobs, mu and sigma must be aligned$"):
        min_k_plus_plus(LPS, MU[:3], SD, 20)
    with pytest.raises(ValueError, match="aligned"):
        min_k_plus_plus(LPS, MU, SD[:3], 20)


def test_gap_k_by_the_paper_its_window_and_its_floor() -> None:
    for n in (1, 2, 3, 4, 10):
        for k in (10, 20, 50, 100):
            assert gap_k(LPS[:n], TOP[:n], SD[:n], k) == pytest.approx(
                gap_k_paper(LPS[:n], TOP[:n], SD[:n], k))
    # window 2 given: the mean of pairs
    assert gap_k([-1.0, -3.0, -2.0], [0.0] * 3, [1.0] * 3, 100, window=2) == pytest.approx(-2.25)
    # sigma 0: the authors clamp the variance at 1e-8, so sigma at 1e-4
    assert gap_k([-1.0], [0.0], [0.0], 100) == pytest.approx(-1e4)
    with pytest.raises(ValueError,
                       match="^logprobs, top-1 log-probabilities and sigma must be aligned$"):
        gap_k(LPS, TOP, SD[:2], 20)


def test_min_k_ngram_windows_and_short_texts() -> None:
    assert min_k_ngram(LPS, 100, 2) == pytest.approx(sum(LPS[:-1] + LPS[1:]) / 18)
    assert min_k_ngram([-1.0, -3.0], 20, 2) == pytest.approx(-2.0)  # one window: all tokens
    assert min_k_ngram([-1.0, -3.0], 20, 5) == pytest.approx(-2.0)
    with pytest.raises(ValueError, match="must be >= 1, got 0"):
        min_k_ngram(LPS, 20, 0)
