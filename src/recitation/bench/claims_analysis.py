"""The claims of ``recitation bench claims``, from its stored records alone
(:mod:`recitation.bench.claims_run`).

* **Choices, on the development organism only.** For every registry method that writes
  several scores (Min-K% at k = 10/20/30%, Min-K%++, Gap-K%; SaMIA and its zlib form; PEARL's
  sensitivity, GFD and s_m), the variant with the highest TPR at 1% FPR (conformal threshold on
  its calibration half; ties: the higher AUC) is the method's score on the test organisms.
* **Rates, per test organism.** The conformal threshold at FPR ``alpha``
  (:func:`recitation.bench.claims.conformal_threshold`) on the calibration half of the
  non-members; TPR on the members of a dose group, with a bootstrap interval that resamples
  the members and the calibration non-members (the threshold's own variance); FPR read on
  the test half. Rates at an ``alpha`` the sizes do not measure
  (:func:`recitation.bench.claims.supported`) are shown but never ranked.
* **Across organisms.** Each organism's TPR, their mean and spread (min-max), the pooled
  TPR (members flagged over members, all organisms) with an interval that resamples the
  organisms too (:func:`recitation.bench.claims.pooled_interval`); the pooled FPR read with
  its Clopper-Pearson interval; a one-sided Fisher test of members against test non-members
  flagged (above chance), Holm-adjusted over every row of its table.
* **Who beats whom.** Within an access level, every pair of methods by the exact McNemar test
  on the same members (each organism's members, flagged at each method's own threshold),
  Holm-adjusted over every pair compared in the whole benchmark. A level has a *winner* only
  where its best pooled TPR beats every other method of the level (adjusted p < 0.05);
  otherwise the methods not distinguishable from the best are *tied* with it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from recitation.bench.claims import (
    above_chance,
    bootstrap_flagged,
    conformal_threshold,
    holm,
    mcnemar_exact,
    pooled_interval,
    supported,
)
from recitation.bench.claims_run import OrganismScores
from recitation.metrics.stats import clopper_pearson, roc_auc

LEVEL = 0.05
Flags = tuple[np.ndarray, np.ndarray]
"""A method's pooled member flags and which of those members it scored."""
BLIND = {"blind_bow": "bag of words (out of fold)", "length_chars": "length in characters"}
BLIND_ACCESS = "none (blind baseline)"


def dev_rate(org: OrganismScores, method: str, alpha: float = 0.01) -> tuple[float, float]:
    """(TPR at ``alpha`` on every member, AUC against every non-member) on ``org``."""
    v = org.scores[method]
    pos = [v[i] for i in org.members("all") if i in v]
    cal = [v[i] for i in org.nonmembers(True) if i in v]
    neg = [v[i] for i in org.nonmembers(True) + org.nonmembers(False) if i in v]
    tau = conformal_threshold(cal, alpha)
    tpr = float(np.mean(np.asarray(pos) > tau)) if tau is not None and pos else 0.0
    return tpr, roc_auc([1] * len(pos) + [0] * len(neg), pos + neg)


def dev_choices(dev: OrganismScores) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """Per registry method with several scores: the chosen one, and every variant's row."""
    from recitation import methods

    chosen: dict[str, str] = {}
    rows: list[dict[str, Any]] = []
    for info, suffix in itertools.product(methods.all_methods("detector"), settings(dev)):
        variants = [w + suffix for w in info.writes if w + suffix in dev.scores]
        if len(variants) < 2:
            continue
        rated = {w: dev_rate(dev, w) for w in variants}
        best = max(variants, key=lambda w: rated[w])
        chosen[info.name + suffix] = best
        rows += [{"method": info.name + suffix, "score": w, "tpr_at_1": rated[w][0],
                  "auc": rated[w][1], "chosen": w == best} for w in variants]
    return chosen, rows


def settings(org: OrganismScores) -> list[str]:
    """The score-name suffixes on ``org``: ``""`` (our defaults) and each published-setting
    variant's (``@published``: bench/groundtruth.VARIANTS), each a method of its own."""
    return [""] + sorted({m[m.index("@"):] for m in org.scores if "@" in m})


def candidates(dev: OrganismScores, tests: Sequence[OrganismScores],
               chosen: dict[str, str]) -> list[str]:
    """The scores the test tables rank: one per method (the chosen variant), present on
    every test organism; the blind baselines last."""
    from recitation import methods

    left_out = {w + suffix for info, suffix in itertools.product(
                    methods.all_methods("detector"), settings(dev))
                if info.name + suffix in chosen
                for w in info.writes if w + suffix != chosen[info.name + suffix]}
    common = set.intersection(*(set(t.scores) for t in tests)) if tests else set()
    model = sorted(m for m in common if m not in left_out and m not in BLIND)
    return model + [m for m in BLIND if m in common]


def access_of(score: str) -> str:
    from recitation.bench.lowfpr import access_level

    return BLIND_ACCESS if score in BLIND else access_level(score)


def organism_rate(org: OrganismScores, method: str, group: str, alpha: float,
                  n_boot: int, seed: int) -> dict[str, Any]:
    """One organism's rate of ``method`` at ``alpha`` for members of ``group``; the member
    flags (every member of ``group``: unscored ones not flagged, ``_scored`` False) and
    bootstrap counts ride along under ``_flags`` / ``_scored`` / ``_boot`` (not stored)."""
    v = org.scores[method]
    everyone = org.members(group)
    pos = [v[i] for i in everyone if i in v]
    cal = [v[i] for i in org.nonmembers(True) if i in v]
    test = [v[i] for i in org.nonmembers(False) if i in v]
    row: dict[str, Any] = {"organism": org.name, "n_members": len(pos),
                           "n_calibration": len(cal), "n_test": len(test),
                           "supported": supported(alpha, len(cal), len(test))}
    tau = conformal_threshold(cal, alpha)
    if tau is None or not pos or not test:
        return row | {"threshold": None}
    flags = np.asarray([i in v and v[i] > tau for i in everyone])  # unscored: not flagged
    fp = int(np.sum(np.asarray(test) > tau))
    boot = bootstrap_flagged(pos, cal, alpha, n_boot=n_boot, seed=seed)
    assert boot is not None  # the threshold exists, so the resampled ones do
    lo, hi = np.quantile(boot / len(pos), [0.025, 0.975])
    return row | {"threshold": tau, "tp": int(flags.sum()), "tpr": int(flags.sum()) / len(pos),
                  "tpr_ci": [float(lo), float(hi)], "fp": fp, "fpr": fp / len(test),
                  "_flags": flags, "_scored": np.asarray([i in v for i in everyone]),
                  "_boot": boot}


def pooled_row(method: str, group: str, alpha: float, rates: list[dict[str, Any]],
               n_boot: int, seed: int) -> dict[str, Any]:
    """One method's row across the test organisms (module docstring)."""
    row: dict[str, Any] = {"method": method, "access": access_of(method), "dose": group,
                           "alpha": alpha, "organisms": [_public(r) for r in rates],
                           "supported": all(r["supported"] for r in rates)}
    if any(r["threshold"] is None for r in rates):
        return row
    tp, n = sum(r["tp"] for r in rates), sum(r["n_members"] for r in rates)
    fp, nt = sum(r["fp"] for r in rates), sum(r["n_test"] for r in rates)
    tprs = [r["tpr"] for r in rates]
    return row | {
        "tp": tp, "n_members": n, "tpr": tp / n,
        "tpr_ci": list(pooled_interval([r["_boot"] for r in rates],
                                       [r["n_members"] for r in rates], seed=seed,
                                       n_boot=n_boot)),
        "tpr_mean": float(np.mean(tprs)), "tpr_min": min(tprs), "tpr_max": max(tprs),
        "fp": fp, "n_test": nt, "fpr": fp / nt, "fpr_ci": list(clopper_pearson(fp, nt)),
        "p_above_chance": above_chance(tp, n, fp, nt)}


def _public(rate: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in rate.items() if not k.startswith("_")}


def compare(rows: list[dict[str, Any]], flags: dict[tuple[str, str, float], Flags]
            ) -> list[dict[str, Any]]:
    """Every pair of methods of one access level (same dose group, same ``alpha``, both
    measured): the exact McNemar p on the pooled member flags, then Holm over all pairs."""
    pairs: list[dict[str, Any]] = []
    keyed = itertools.groupby(sorted(_ranked(rows), key=_cell), key=_cell)
    for (access, group, alpha), cell in keyed:
        for a, b in itertools.combinations(sorted(cell, key=lambda r: -r["tpr"]), 2):
            (fa, sa), (fb, sb) = flags[(a["method"], group, alpha)], \
                flags[(b["method"], group, alpha)]
            both = sa & sb  # the members both scored (a subsampled unit scores fewer)
            fa, fb = fa[both], fb[both]
            pairs.append({"access": access, "dose": group, "alpha": alpha,
                          "a": a["method"], "b": b["method"], "n_paired": int(both.sum()),
                          "tpr_a": a["tpr"],
                          "tpr_b": b["tpr"], "only_a": int(np.sum(fa & ~fb)),
                          "only_b": int(np.sum(fb & ~fa)),
                          "p": mcnemar_exact(fa.tolist(), fb.tolist())})
    for pair, adj in zip(pairs, holm([p["p"] for p in pairs]), strict=True):
        pair["p_holm"] = adj
    return pairs


def _cell(r: dict[str, Any]) -> tuple[str, str, float]:
    """A row's or a pair's table cell: access level, dose group, ``alpha``."""
    return (r["access"], r["dose"], r["alpha"])


def _ranked(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows that are compared: measured at a supported FPR, not a blind baseline."""
    return [r for r in rows if "tpr" in r and r["supported"] and r["access"] != BLIND_ACCESS]


def verdicts(rows: list[dict[str, Any]], pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per access level, dose group and ``alpha``: the winner (it beats every other method
    of the level after Holm) or none, and the methods tied with the best."""
    out = []
    for (access, group, alpha), cell in itertools.groupby(sorted(_ranked(rows), key=_cell),
                                                          _cell):
        cell_rows = sorted(cell, key=lambda r: -r["tpr"])
        best = cell_rows[0]["method"]
        mine = [p for p in pairs if _cell(p) == (access, group, alpha)
                and best in (p["a"], p["b"])]
        tied = [p["b"] if p["a"] == best else p["a"] for p in mine if p["p_holm"] >= LEVEL]
        beats = all(p["p_holm"] < LEVEL and p["a"] == best for p in mine)
        out.append({"access": access, "dose": group, "alpha": alpha, "best": best,
                    "tpr": cell_rows[0]["tpr"], "winner": best if beats and mine else None,
                    "tied": tied, "methods": len(cell_rows),
                    "p_holm_max": max((p["p_holm"] for p in mine), default=None)})
    return out


def analyse(orgs: Sequence[OrganismScores], alphas: Sequence[float], *, n_boot: int = 2000,
            seed: int = 0) -> dict[str, Any]:
    """Every table's records (module docstring), JSON-ready."""
    dev = next(o for o in orgs if o.dev)
    tests = [o for o in orgs if not o.dev]
    chosen, dev_rows = dev_choices(dev)
    rows: list[dict[str, Any]] = []
    flags: dict[tuple[str, str, float], Flags] = {}
    for method in candidates(dev, tests, chosen):
        for group in tests[0].groups():
            for alpha in alphas:
                rates = [organism_rate(t, method, group, alpha, n_boot, seed + i)
                         for i, t in enumerate(tests)]
                rows.append(pooled_row(method, group, alpha, rates, n_boot, seed))
                if all("_flags" in r for r in rates):
                    flags[(method, group, alpha)] = (
                        np.concatenate([r["_flags"] for r in rates]),
                        np.concatenate([r["_scored"] for r in rates]))
    _holm_chance(rows)
    pairs = compare(rows, flags)
    return {"development": {"organism": dev.name, "choices": chosen, "variants": dev_rows},
            "organisms": [{"name": o.name, "seed": o.seed, "dev": o.dev,
                           "members": len(o.members("all")),
                           "calibration": len(o.nonmembers(True)),
                           "test": len(o.nonmembers(False)), "costs": o.costs,
                           "builds": o.builds(),
                           "hosts": sorted({str(u["host"]) for u in o.units.values()
                                            if u.get("host")})}
                          for o in orgs],
            "alphas": list(alphas), "rows": rows, "pairs": pairs,
            "verdicts": verdicts(rows, pairs), "n_boot": n_boot, "seed": seed}


def _holm_chance(rows: list[dict[str, Any]]) -> None:
    """Holm over the above-chance tests of each table (dose group, ``alpha``)."""
    for _, cell in itertools.groupby(sorted((r for r in rows if "p_above_chance" in r),
                                            key=lambda r: (r["dose"], r["alpha"])),
                                     key=lambda r: (r["dose"], r["alpha"])):
        cell_rows = list(cell)
        for r, adj in zip(cell_rows, holm([r["p_above_chance"] for r in cell_rows]),
                          strict=True):
            r["p_above_chance_holm"] = adj
