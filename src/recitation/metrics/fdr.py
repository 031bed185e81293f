"""Catalogue verdicts: one conformal p-value per work against a shared control set, and
Benjamini-Hochberg over the works.

A work's statistic is the mean of a detector's oriented score (higher: more member-like)
over ``m`` of its passages. The controls are cut at random (seeded) into disjoint units of
``m`` passages, each with the same statistic. A work's conformal p-value is

    p = (1 + #{units u : S_u >= S_work}) / (K + 1)        (K units)

Under the null "the work's passages are exchangeable with the control passages" (drawn from
one distribution, unseen alike), the work's statistic is exchangeable with the units', so
``P(p <= t) <= t``. The p-values of many works computed against the same units are
positively dependent (PRDS), and the Benjamini-Hochberg procedure at level ``q`` over them
controls the false discovery rate at ``q`` (Bates, Candes, Lei, Romano and Sesia, 2023,
"Testing for outliers with conformal p-values", Annals of Statistics 51(1), Theorem 2).
BH itself is scipy's (``scipy.stats.false_discovery_control``). The smallest p-value is
``1 / (K + 1)``: with ``W`` works, nothing can be found unless ``1 / (K + 1) <= q / W``
for one work (more works found together need less), so the controls bound the power.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import false_discovery_control

DEFAULT_Q = 0.1
"""The catalogue's false discovery rate (audit setting ``fdr_q``)."""


def control_units(scores: Sequence[float], m: int, seed: int) -> list[float]:
    """Mean score of each of ``len(scores) // m`` disjoint units of ``m`` controls, drawn
    at random with ``seed`` (the controls left over are not used)."""
    if m < 1:
        raise ValueError("a unit needs at least one passage")
    order = np.random.default_rng(seed).permutation(len(scores))
    k = len(scores) // m
    arr = np.asarray(scores, dtype=float)[order[: k * m]].reshape(k, m)
    return [float(x) for x in arr.mean(axis=1)]


def conformal_pvalue(statistic: float, units: Sequence[float]) -> float:
    """``(1 + #{u >= statistic}) / (K + 1)``: higher statistics are more member-like."""
    return (1 + sum(u >= statistic for u in units)) / (len(units) + 1)


@dataclass(frozen=True)
class WorkTest:
    work: str
    passages: int  # scored passages of the work used (m)
    statistic: float
    p_value: float
    adjusted: float  # BH-adjusted p-value
    discovered: bool


def catalogue_tests(works: Mapping[str, Sequence[float]], controls: Sequence[float],
                    q: float, seed: int) -> tuple[list[WorkTest], int]:
    """Each work tested against units of the controls, then BH at ``q``; and the number of
    control units. Every work uses ``m`` = the fewest scored passages of any work (a
    larger work: ``m`` of them drawn at random with ``seed``), so that all p-values share
    the same units."""
    if len(works) < 2:
        raise ValueError("a catalogue needs at least two works")
    if not 0 < q < 1:
        raise ValueError(f"the false discovery rate q must lie in (0, 1), got {q}")
    m = min(len(v) for v in works.values())
    if m < 1:
        raise ValueError("every work needs at least one scored passage")
    units = control_units(controls, m, seed)
    if not units:
        raise ValueError(f"{len(controls)} scored controls make no unit of {m} passages")
    rng = np.random.default_rng([seed, 1])
    stats = {w: float(np.mean(rng.choice(np.asarray(v, dtype=float), size=m, replace=False)))
             for w, v in works.items()}
    ps = [conformal_pvalue(s, units) for s in stats.values()]
    adj = false_discovery_control(ps, method="bh")
    return [WorkTest(w, m, s, p, float(a), bool(a <= q))
            for (w, s), p, a in zip(stats.items(), ps, adj, strict=True)], len(units)


__all__ = ["DEFAULT_Q", "WorkTest", "catalogue_tests", "conformal_pvalue", "control_units"]
