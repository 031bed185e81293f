"""The paper's analysis (Michel et al. 2025, section 5, table 2, appendix E), from the
per-novel figures of the probe and task runs.

- Spearman rho (``scipy.stats.spearmanr``) between attribution accuracy (all / explicit /
  other) and each memorization measure (name cloze, CSG-M, CSG-M cloze, CSG-R, Min-K%), with
  its p-value.
- Top-5 vs bottom-5: the 5 novels with the highest and the 5 with the lowest value of the
  measure (fewer when there are fewer than 10 novels: ``n // 2`` each), Student's t-test
  (``scipy.stats.ttest_ind``, equal variances) on their accuracies; novels tied at a cut
  (in or out decided by name order) are listed.
- Propensity-score matching: a logistic regression (``sklearn.linear_model.
  LogisticRegression``; by default unpenalized, the maximum-likelihood fit of the
  econometric method, with scikit-learn's L2 penalty C=1 as an option; covariates
  standardized) of the group-2 indicator (default: the six novels of PDNC's June 2023
  release) on the covariates (CSG-M, name cloze, Min-K% at the first k, overall accuracy:
  the paper's); each group-2 novel is matched with replacement to the group-1 novel of
  nearest propensity (``sklearn.neighbors.NearestNeighbors``, one neighbour); paired
  t-test (``scipy.stats.ttest_rel``) of each outcome (Min-K% per k, accuracy) between the
  group-2 novels and their matches, with the paper's one-sided p (appendix E: t = 0.54,
  p = 0.3) and the two-sided p beside. Optionally an outcome that is also a covariate is
  left out of the model that matches for it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

PDNC_SECOND_RELEASE = frozenset({"MansfieldPark", "HardTimes", "OliverTwist", "WinnieThePooh",
                                 "WhereAngelsFearToTread", "APassageToIndia"})
"""The folders of PDNC's June 2023 release (shared/data/README.md): the default group 2."""


def _finite(pairs: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    return [(a, b) for a, b in pairs if not (math.isnan(a) or math.isnan(b))]


def spearman(x: Mapping[str, float], y: Mapping[str, float]) -> dict[str, float]:
    """rho and p over the novels present in both (NaN values left out)."""
    from scipy.stats import spearmanr

    pairs = _finite([(x[n], y[n]) for n in sorted(set(x) & set(y))])
    if len(pairs) < 3:
        return {"rho": float("nan"), "p": float("nan"), "n": len(pairs)}
    if len({a for a, _ in pairs}) < 2 or len({b for _, b in pairs}) < 2:
        # a constant side: no ranking, rho undefined (scipy warns and returns NaN)
        return {"rho": float("nan"), "p": float("nan"), "n": len(pairs), "constant": True}
    res = spearmanr([a for a, _ in pairs], [b for _, b in pairs])
    return {"rho": float(res.statistic), "p": float(res.pvalue), "n": len(pairs)}


def _ties_at_cut(names: Sequence[str], measure: Mapping[str, float], k: int) -> list[str]:
    """The novels whose value equals the value at either cut (the k-th from the top or from
    the bottom) when some of them fall on both sides of it: which of them are in the group
    is then decided by the name order, not by the measure."""
    tied: set[str] = set()
    for inside, outside in ((names[k - 1], names[k]), (names[-k], names[-k - 1])):
        if measure[inside] == measure[outside]:
            tied |= {n for n in names if measure[n] == measure[inside]}
    return sorted(tied)


def top_bottom(measure: Mapping[str, float], acc: Mapping[str, float],
               k: int = 5) -> dict[str, Any]:
    """Student's t-test of accuracy between the ``k`` most and ``k`` least measured novels
    (ties broken by name, and the novels tied at a cut listed in ``ties_at_cut``; ``k``
    reduced to half the novels)."""
    from scipy.stats import ttest_ind

    pairs = _finite([(measure[n], acc[n]) for n in sorted(set(measure) & set(acc))])
    names = sorted((n for n in set(measure) & set(acc)
                    if (measure[n], acc[n]) in pairs), key=lambda n: (-measure[n], n))
    k = min(k, len(names) // 2)
    if k < 2:
        return {"t": float("nan"), "p": float("nan"), "k": k, "top": [], "bottom": [],
                "ties_at_cut": []}
    top, bottom = names[:k], names[-k:]
    res = ttest_ind([acc[n] for n in top], [acc[n] for n in bottom])
    return {"t": float(res.statistic), "p": float(res.pvalue), "k": k, "top": top,
            "bottom": bottom, "ties_at_cut": _ties_at_cut(names, measure, k)}


def paired_t(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """Paired Student t-test of ``a`` - ``b``: t, the paper's one-sided p (``p``: the chance
    of a t at least this far from 0 on the side observed, i.e. half the two-sided p; appendix
    E's t = 0.54, p = 0.3 and t = 0.75, p = 0.25 are this form) and the two-sided p beside."""
    from scipy.stats import ttest_rel

    res = ttest_rel(a, b)
    two = float(res.pvalue)
    return {"t": float(res.statistic), "p": two / 2, "p_two_sided": two, "n": len(a)}


def _match(covariates: Mapping[str, Sequence[float]], names: list[str], group2: set[str],
           penalty: str | None) -> tuple[dict[str, float], dict[str, str]]:
    """Propensity of each novel (logistic regression on standardized covariates) and each
    group-2 novel's nearest group-1 novel by propensity (with replacement)."""
    import warnings

    import numpy as np
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import NearestNeighbors
    from sklearn.preprocessing import StandardScaler

    g2 = [n for n in names if n in group2]
    g1 = [n for n in names if n not in group2]
    x = StandardScaler().fit_transform(np.array([covariates[n] for n in names], dtype=float))
    y = np.array([n in group2 for n in names], dtype=int)
    with warnings.catch_warnings():  # separable groups: the unpenalized fit diverges
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = LogisticRegression(C=math.inf if penalty is None else 1.0, tol=1e-10,
                                   max_iter=10_000)
        ps = model.fit(x, y).predict_proba(x)[:, 1]
    score = dict(zip(names, ps.tolist(), strict=True))
    nn = NearestNeighbors(n_neighbors=1).fit(np.array([[score[n]] for n in g1]))
    idx = nn.kneighbors(np.array([[score[n]] for n in g2]), return_distance=False)[:, 0]
    return score, {n: g1[i] for n, i in zip(g2, idx.tolist(), strict=True)}


def propensity_match(covariates: Mapping[str, Sequence[float]], group2: set[str],
                     outcomes: Mapping[str, Mapping[str, float]], *,
                     penalty: str | None = None,
                     covariate_names: Sequence[str] | None = None,
                     leave_outcome_out: bool = False) -> dict[str, Any]:
    """Propensity scores, the matches and a paired t-test per outcome (module docstring).
    ``penalty``: None (default, the plain maximum-likelihood logistic regression of the
    econometric method) or "l2" (scikit-learn's default, C = 1). ``leave_outcome_out``
    (needs ``covariate_names``): for each outcome that is also a covariate, fit and match
    again without it (an outcome among the covariates makes the matching partly circular)."""
    names = sorted(n for n, v in covariates.items() if not any(math.isnan(x) for x in v))
    g2 = [n for n in names if n in group2]
    if penalty not in (None, "l2"):
        raise ValueError(f"penalty must be None or 'l2', got {penalty!r}")
    if len(g2) < 2 or len(names) - len(g2) < 1:
        return {"error": f"needs >= 2 group-2 and >= 1 group-1 novels with every covariate; "
                f"have {len(g2)} and {len(names) - len(g2)}"}
    score, matches = _match(covariates, names, group2, penalty)
    tests, refits = {}, {}
    for name, values in outcomes.items():
        m = matches
        if leave_outcome_out and covariate_names and name in covariate_names:
            i = list(covariate_names).index(name)
            kept = {n: [x for j, x in enumerate(covariates[n]) if j != i] for n in names}
            _, m = _match(kept, names, group2, penalty)
            refits[name] = m
        pairs = _finite([(values[a], values[b]) for a, b in m.items()
                         if a in values and b in values])
        if len(pairs) < 2:
            tests[name] = {"t": float("nan"), "p": float("nan"),
                           "p_two_sided": float("nan"), "n": len(pairs)}
            continue
        tests[name] = paired_t([a for a, _ in pairs], [b for _, b in pairs])
    return {"propensity": score, "matches": matches, "tests": tests, "penalty": penalty,
            "matches_without_outcome": refits}


def _fmt(x: float, star: bool = False, p: float = float("nan")) -> str:
    if math.isnan(x):
        return "n/a"
    return f"{x:.2f}" + ("*" if star and p < 0.05 else "")


def table2(per_novel: Mapping[str, Mapping[str, float]], measures: Sequence[str],
           accuracies: Sequence[str] = ("all", "explicit", "other")) -> tuple[str, dict[str, Any]]:
    """The Markdown table 2 (rho with * when p < 0.05, top-5 minus bottom-5 t and p) and
    the numbers."""
    head = "| measure | " + " | ".join(f"rho ({a}) | Top-Bot t (p) ({a})" for a in accuracies)
    lines = [head + " |", "|---" * (1 + 2 * len(accuracies)) + "|"]
    numbers: dict[str, Any] = {}
    for m in measures:
        mv = {n: v[m] for n, v in per_novel.items() if m in v}
        cells = []
        for a in accuracies:
            av = {n: v[a] for n, v in per_novel.items() if a in v}
            s, tb = spearman(mv, av), top_bottom(mv, av)
            numbers[f"{m}/{a}"] = {"spearman": s, "top_bottom": tb}
            cells += [_fmt(s["rho"], True, s["p"]),
                      f"{_fmt(tb['t'])} ({_fmt(tb['p'])}, k={tb['k']})"]
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    tied = {k: v["top_bottom"]["ties_at_cut"] for k, v in numbers.items()
            if v["top_bottom"].get("ties_at_cut")}
    if tied:
        lines += ["", "Tied at a top/bottom cut (which of them count is decided by name "
                  "order, not by the measure): " + "; ".join(
                      f"{k}: {', '.join(v)}" for k, v in sorted(tied.items()))]
    const = sorted({k for k, v in numbers.items() if v["spearman"].get("constant")})
    if const:
        lines += ["", "n/a where a side is the same for every novel (no ranking, so no rank "
                  "correlation and no t-test): " + ", ".join(const)]
    return "\n".join(lines) + "\n", numbers


def per_novel_figures(runs: Sequence[tuple[str, dict[str, Any], list[dict[str, Any]]]]
                      ) -> dict[str, dict[str, float]]:
    """novel -> measure -> value, from (job, params, records) of probe and task runs."""
    from recitation.probes.contamination import min_k_by_novel
    from recitation.probes.csg import csg_scores
    from recitation.probes.name_cloze import per_novel_accuracy
    from recitation.probes.quote_attribution import attribution_accuracy

    out: dict[str, dict[str, float]] = {}
    for job, params, recs in runs:
        if job == "name_cloze":
            for n, (acc, _) in per_novel_accuracy(recs).items():
                out.setdefault(n, {})["name_cloze"] = acc
        elif job == "csg":
            for n, s in csg_scores(recs).items():
                out.setdefault(n, {}).update({"csg_m": s["csg_memorization"],
                                              "csg_m_cloze": s["csg_memorization_cloze"],
                                              "csg_r": s["csg_reasoning"]})
        elif job == "quote_attribution":
            qa = attribution_accuracy(recs, params.get("min_quotes", 10))
            for n, row in qa.items():
                out.setdefault(n, {}).update({k: row[k] for k in ("all", "explicit", "other")})
        elif job == "contamination":
            for n, row in min_k_by_novel(recs).items():
                out.setdefault(n, {}).update({f"min_k_{k}": float(v) for k, v in row.items()
                                              if k != "records"})
    return out


def _column_order(col: str) -> tuple[str, float]:
    """By name, the ``min_k_<k>`` columns by k (``min_k_5`` before ``min_k_10``)."""
    if col.startswith("min_k_"):
        return "min_k_", float(col.removeprefix("min_k_"))
    return col, 0.0


def min_k_columns(cols: Sequence[str]) -> list[str]:
    """The ``min_k_<k>`` columns, by k."""
    return sorted((c for c in cols if c.startswith("min_k_")), key=_column_order)


def min_k_covariate(mink: Sequence[str]) -> list[str]:
    """The Min-K% of the propensity model: Min-10% where it was scored (the paper names
    "Min-K%" without its k), else the smallest k."""
    return ["min_k_10"] if "min_k_10" in mink else list(mink[:1])


def report(per_novel: Mapping[str, Mapping[str, float]],
           group2: frozenset[str] = PDNC_SECOND_RELEASE, *, penalty: str | None = None,
           leave_outcome_out: bool = False) -> tuple[str, dict[str, Any]]:
    """The Markdown report: per-novel figures, table 2, propensity matching
    (:func:`propensity_match`'s ``penalty`` and ``leave_outcome_out``)."""
    cols = sorted({k for v in per_novel.values() for k in v}, key=_column_order)
    lines = ["# Book memorization and quotation attribution", "",
             "## Per novel", "", "| novel | group | " + " | ".join(cols) + " |",
             "|---|---|" + "---|" * len(cols)]
    for n in sorted(per_novel):
        g = "2" if n in group2 else "1"
        lines.append(f"| {n} | {g} | " + " | ".join(
            _fmt(per_novel[n].get(c, float("nan"))) for c in cols) + " |")
    measures: list[str] = [m for m in ("name_cloze", "csg_m", "csg_m_cloze", "csg_r")
                           if m in cols]
    mink = min_k_columns(cols)
    measures += mink
    numbers: dict[str, Any] = {"per_novel": per_novel}
    if {"all", "explicit", "other"} <= set(cols) and measures:
        t2, numbers["table2"] = table2(per_novel, measures)
        lines += ["", "## Table 2: Spearman rho with accuracy (* p < 0.05), top-k vs bottom-k "
                  "t-test", "", t2]
    cov = [c for c in ("csg_m", "name_cloze", *min_k_covariate(mink), "all") if c in cols]
    if mink and len(cov) >= 2:
        pm = propensity_match({n: [v.get(c, float("nan")) for c in cov]
                               for n, v in per_novel.items()}, set(group2),
                              {o: {n: v[o] for n, v in per_novel.items() if o in v}
                               for o in [*mink, "all"] if o in cols},
                              penalty=penalty, covariate_names=cov,
                              leave_outcome_out=leave_outcome_out)
        numbers["propensity"] = pm
        lines += ["## Annotation contamination: propensity-score matching", "",
                  f"covariates: {', '.join(cov)}; group 2: {sorted(group2 & set(per_novel))}; "
                  f"logistic regression {'unpenalized' if penalty is None else 'with L2, C = 1'}"
                  + ("; an outcome that is a covariate is matched without it"
                     if leave_outcome_out else "")]
        if "error" in pm:
            lines += ["", f"not computed: {pm['error']}"]
        else:
            lines += ["", "| group-2 novel | match | propensity (2) | propensity (match) |",
                      "|---|---|---|---|"]
            lines += [f"| {a} | {b} | {pm['propensity'][a]:.3f} | {pm['propensity'][b]:.3f} |"
                      for a, b in pm["matches"].items()]
            lines += ["", "| outcome | paired t (group 2 - match) | p (one-sided, the "
                      "paper's) | p (two-sided) | pairs |", "|---|---|---|---|---|"]
            lines += [f"| {o} | {_fmt(t['t'])} | {_fmt(t['p'])} | {_fmt(t['p_two_sided'])} "
                      f"| {t['n']} |" for o, t in pm["tests"].items()]
    return "\n".join(lines) + "\n", numbers
