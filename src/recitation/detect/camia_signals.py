"""CAMIA's 75 signals of one text (Chang et al., EMNLP 2025), as the authors' code computes
them (changhongyan123/context_aware_mia at 3963cb2: ``util_features.py``,
``run_ours_train_lr.py``), from the gold tokens' natural-log probabilities ``x`` of the text
and of the text repeated (copies joined by single spaces, one pass).

Per cut-off e in (full, 200, 300) ("full" is ``x[0:-1]``: the authors' ``end_time = -1``
drops the last token): the mean log-probability (``loss``), ``ppl = exp(-loss)``, the token
diversity (distinct ids over ids, the ids' slice taken from the first token, so offset by one
from ``x``), ``count_mean`` (how many values exceed their mean: a count), ``loss`` and ``ppl``
over the diversity; over the first 200 values, the share at or above -1, -2, -3
(``count_above``) and the Lempel-Ziv complexity at 3, 4, 5 bins. Each of these but the
diversity also as the difference between the text's first and its second and third copies in
the repeated text (``diff1_``, ``diff2_``; the diversity inside the calibrated ones stays the
text's). On the repeated text's whole trajectory, cut at 600, 800, 1,000 tokens: the slope of
a line fitted to it and its approximate entropy (m = 8, r = 0.8 std). On ``x``, cut at all,
200, 300: the share of values above the mean of the values before them (``count_above_pre``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

CUTS: tuple[tuple[str, int | None], ...] = (("full", -1), ("200", 200), ("300", 300))
THRESHOLDS = (-1.0, -2.0, -3.0)
LZ_BINS = (3, 4, 5)
REPEATED_CUTS = (600, 800, 1000)
PRE_CUTS: tuple[tuple[str, int], ...] = (("all", 10**9), ("200", 200), ("300", 300))
APEN_M, APEN_R = 8, 0.8
COPIES = 6  # the text and 5 repetitions (run_ours_construct_mia_data.py, num_repeatitions)
TAILS = 4  # copies() drops up to 3 of the text's last tokens where the join merges them


def lz_complexity(x: Sequence[float], bins: int) -> float:
    """Values binned to 100 levels over [min, 0], then to ``bins`` symbols; the share of
    distinct phrases of a greedy Lempel-Ziv parse (a trailing known phrase not counted)."""
    import numpy as np

    a = np.asarray(x, dtype=float)
    xd = np.digitize(a, bins=np.linspace(a.min(), 0, 100), right=True)
    edges = np.linspace(xd.min(), xd.max(), bins + 1)[1:]
    seq = np.searchsorted(edges, xd, side="left").tolist()
    seen: set[tuple[int, ...]] = set()
    ind, inc, n = 0, 1, len(seq)
    while ind + inc <= n:
        phrase = tuple(seq[ind : ind + inc])
        if phrase in seen:
            inc += 1
        else:
            seen.add(phrase)
            ind, inc = ind + inc, 1
    return len(seen) / n


def approximate_entropy(x: Sequence[float], m: int = APEN_M, r: float = APEN_R) -> float:
    """|phi(m) - phi(m + 1)|, r scaled by the population standard deviation; 0 when the
    series has at most m + 1 values (self-matches counted, as theirs)."""
    import numpy as np

    a = np.asarray(x, dtype=float)
    n = len(a)
    if n <= m + 1:
        return 0.0
    tol = r * float(np.std(a))

    def phi(k: int) -> float:
        emb = np.lib.stride_tricks.sliding_window_view(a, k)
        dist = np.abs(emb[:, None, :] - emb[None, :, :]).max(axis=2)
        c = (dist <= tol).sum(axis=1) / (n - k + 1)
        return float(np.log(c).sum() / (n - k + 1))

    return abs(phi(m) - phi(m + 1))


def slope(x: Sequence[float]) -> float:
    import numpy as np

    return float(np.polyfit(np.arange(len(x)), np.asarray(x, dtype=float), 1)[0])


def _mean(v: Sequence[float]) -> float:
    return sum(v) / len(v)


def base_signals(x: Sequence[float], ids: Sequence[Any]) -> dict[str, float]:
    """The single-trajectory signals (24) of ``x`` with the text's token ids ``ids``."""
    out: dict[str, float] = {}
    for name, e in CUTS:
        xs, ls = list(x[0:e]), list(ids[0:e])
        loss = _mean(xs)
        ppl = math.exp(-loss)
        div = len(set(ls)) / len(ls)
        mu = _mean(xs)
        out |= {f"loss_{name}": loss, f"ppl_{name}": ppl, f"token_diversity_{name}": div,
                f"count_mean_{name}": float(sum(v > mu for v in xs)),
                f"calibrated_loss_{name}": loss / div, f"calibrated_ppl_{name}": ppl / div}
    head = list(x[0:200])
    for thr in THRESHOLDS:
        out[f"count_above_{-thr:g}"] = sum(v >= thr for v in head) / len(head)
    for b in LZ_BINS:
        out[f"lz_{b}"] = lz_complexity(head, b)
    return out


def copies(x_ids: Sequence[Any], rep_ids: Sequence[Any], rep_lp: Sequence[float],
           tries: int = 4) -> list[list[float]]:
    """The text's copies in the repeated trajectory: every occurrence of its ids from the
    third on (``labels[2:]``: the join changes the first tokens), less the last two
    occurrences, each the log-probabilities of those ids there. Where the first word
    tokenizes differently after a space, the pattern loses one more leading token, up to
    ``tries`` times (the authors shorten it too, and stop after 4). Where that finds none,
    the same search again without the text's last token, then its last 2 and 3 (ours): a
    text ending in a newline or a space ends in a token that merges with the space joining
    the copies, so no copy matches whole (the authors' search never ends there); blank
    lines at the end can merge over two tokens (``'.', '\\n\\n', '\\n\\n\\n'`` before
    the join, ``'.', '\\n\\n\\n\\n', '\\n '`` in it). A text found with fewer dropped
    tokens is found as before."""
    for tail in range(TAILS):
        for skip in range(2, 2 + tries):
            target = list(x_ids[skip : len(x_ids) - tail])
            n = len(target)
            if n < 2:
                break
            starts = [i for i in range(1, len(rep_ids) - n + 1)
                      if list(rep_ids[i : i + n]) == target]
            if len(starts) >= 3:
                return [list(rep_lp[s - 1 : s - 1 + n]) for s in starts[:-2]]
    return []


def count_above_pre(x: Sequence[float], cut: int) -> float:
    vals = [x[t] > _mean(x[:t]) for t in range(1, min(cut, len(x)))]
    return sum(vals) / len(vals)


def camia_signals(x: Sequence[float], ids: Sequence[Any], rep_lp: Sequence[float],
                  rep_ids: Sequence[Any]) -> dict[str, float]:
    """All 75 signals of a text from its scores and its repeated text's."""
    if len(x) < 4:
        raise ValueError("CAMIA needs at least 5 tokens")
    out = base_signals(x, ids)
    found = copies(ids, rep_ids, rep_lp)
    if len(found) < 3:
        raise ValueError(f"the repeated text holds {len(found)} usable copies of the text "
                         "(3 needed): it tokenizes differently when repeated")
    first = base_signals(found[0], ids)
    for k, other in ((1, found[1]), (2, found[2])):
        sig = base_signals(other, ids)
        out |= {f"diff{k}_{name}": first[name] - sig[name] for name in first
                if not name.startswith("token_diversity")}
    for e in REPEATED_CUTS:
        out[f"slope_{e}"] = slope(rep_lp[:e])
        out[f"approximate_entropy_{e}"] = approximate_entropy(rep_lp[:e])
    for name, c in PRE_CUTS:
        out[f"count_above_pre_{name}"] = count_above_pre(x, c)
    return out


def repeated(text: str, copies_: int = COPIES) -> str:
    """The text and its repetitions joined by single spaces (theirs: ``all_str + " " + s``)."""
    return " ".join([text] * copies_)


def group_of(signal: str) -> str:
    """A signal's family, its two copy differences included (``diff1_loss_200`` ->
    ``loss``): the 11 groups of :data:`recitation.detect.camia.DIRECTIONS`."""
    name = signal.removeprefix("diff1_").removeprefix("diff2_")
    for family in ("count_above_pre", "approximate_entropy", "slope", "calibrated_loss",
                   "calibrated_ppl", "token_diversity", "count_mean", "count_above", "loss",
                   "ppl", "lz"):
        if name.startswith(family):
            return family
    raise ValueError(f"unknown CAMIA signal {signal!r}")


FAMILIES: tuple[str, ...] = ("loss", "ppl", "count_above", "lz", "token_diversity",
                             "count_mean", "calibrated_loss", "calibrated_ppl")
"""The single-trajectory families, in the authors' order (``collect_all_features`` less
``find_t``, which they filter out)."""

KEYS: tuple[str, ...] = tuple(
    k for f in FAMILIES for k in ((f,) if f == "token_diversity" else
                                  (f, f"diff1_{f}", f"diff2_{f}"))
) + ("slope", "approximate_entropy", "count_above_pre")
"""The authors' 25 keys, each of 3 signals (``run_ours_train_lr.py``'s
``extracted_features_single``; theirs ``lz_complexity`` is ``lz`` here, theirs
``overall_diff_1_KEY`` / ``overall_diff_2_KEY`` are ``diff1_KEY`` / ``diff2_KEY``)."""


def key_of(signal: str) -> str:
    """The authors' key of a signal: its family with its copy difference (``diff1_loss_200``
    -> ``diff1_loss``, ``lz_3`` -> ``lz``)."""
    for diff in ("diff1_", "diff2_"):
        if signal.startswith(diff):
            return diff + group_of(signal)
    return group_of(signal)
