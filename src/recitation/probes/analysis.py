"""The paper's analysis (Michel et al. 2025, section 5, table 2, appendix E), from the
per-novel figures of the probe and task runs.

- Spearman rho (``scipy.stats.spearmanr``) between attribution accuracy (all / explicit /
  other) and each memorization measure (name cloze, CSG-M, CSG-M cloze, CSG-R, Min-K%), with
  its p-value.
- Top-5 vs bottom-5: the 5 novels with the highest and the 5 with the lowest value of the
  measure (fewer when there are fewer than 10 novels: ``n // 2`` each), Student's t-test
  (``scipy.stats.ttest_ind``, equal variances) on their accuracies.
- Propensity-score matching: a logistic regression (``sklearn.linear_model.
  LogisticRegression``, default L2 penalty C=1, covariates standardized) of the group-2
  indicator (default: the six novels of PDNC's June 2023 release) on the covariates
  (CSG-M, name cloze, Min-K% at the first k, overall accuracy: the paper's); each group-2
  novel is matched with replacement to the group-1 novel of nearest propensity
  (``sklearn.neighbors.NearestNeighbors``, one neighbour); paired t-test
  (``scipy.stats.ttest_rel``) of each outcome (Min-K% per k, accuracy) between the group-2
  novels and their matches.
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


def top_bottom(measure: Mapping[str, float], acc: Mapping[str, float],
               k: int = 5) -> dict[str, Any]:
    """Student's t-test of accuracy between the ``k`` most and ``k`` least measured novels
    (ties broken by name; ``k`` reduced to half the novels)."""
    from scipy.stats import ttest_ind

    pairs = _finite([(measure[n], acc[n]) for n in sorted(set(measure) & set(acc))])
    names = sorted((n for n in set(measure) & set(acc)
                    if (measure[n], acc[n]) in pairs), key=lambda n: (-measure[n], n))
    k = min(k, len(names) // 2)
    if k < 2:
        return {"t": float("nan"), "p": float("nan"), "k": k, "top": [], "bottom": []}
    top, bottom = names[:k], names[-k:]
    res = ttest_ind([acc[n] for n in top], [acc[n] for n in bottom])
    return {"t": float(res.statistic), "p": float(res.pvalue), "k": k, "top": top,
            "bottom": bottom}


def propensity_match(covariates: Mapping[str, Sequence[float]], group2: set[str],
                     outcomes: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
    """Propensity scores, the matches and a paired t-test per outcome (module docstring)."""
    import numpy as np
    from scipy.stats import ttest_rel
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import NearestNeighbors
    from sklearn.preprocessing import StandardScaler

    names = sorted(n for n, v in covariates.items() if not any(math.isnan(x) for x in v))
    g2 = [n for n in names if n in group2]
    g1 = [n for n in names if n not in group2]
    if len(g2) < 2 or len(g1) < 1:
        return {"error": f"needs >= 2 group-2 and >= 1 group-1 novels with every covariate; "
                f"have {len(g2)} and {len(g1)}"}
    x = StandardScaler().fit_transform(np.array([covariates[n] for n in names], dtype=float))
    y = np.array([n in group2 for n in names], dtype=int)
    ps = LogisticRegression().fit(x, y).predict_proba(x)[:, 1]
    score = dict(zip(names, ps.tolist(), strict=True))
    nn = NearestNeighbors(n_neighbors=1).fit(np.array([[score[n]] for n in g1]))
    idx = nn.kneighbors(np.array([[score[n]] for n in g2]), return_distance=False)[:, 0]
    matches = {n: g1[i] for n, i in zip(g2, idx.tolist(), strict=True)}
    tests = {}
    for name, values in outcomes.items():
        pairs = [(values[a], values[b]) for a, b in matches.items()
                 if a in values and b in values]
        pairs = _finite(pairs)
        if len(pairs) < 2:
            tests[name] = {"t": float("nan"), "p": float("nan"), "n": len(pairs)}
            continue
        res = ttest_rel([a for a, _ in pairs], [b for _, b in pairs])
        tests[name] = {"t": float(res.statistic), "p": float(res.pvalue), "n": len(pairs)}
    return {"propensity": score, "matches": matches, "tests": tests}


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


def report(per_novel: Mapping[str, Mapping[str, float]],
           group2: frozenset[str] = PDNC_SECOND_RELEASE) -> tuple[str, dict[str, Any]]:
    """The Markdown report: per-novel figures, table 2, propensity matching."""
    cols = sorted({k for v in per_novel.values() for k in v})
    lines = ["# Book memorization and quotation attribution", "",
             "## Per novel", "", "| novel | group | " + " | ".join(cols) + " |",
             "|---|---|" + "---|" * len(cols)]
    for n in sorted(per_novel):
        g = "2" if n in group2 else "1"
        lines.append(f"| {n} | {g} | " + " | ".join(
            _fmt(per_novel[n].get(c, float("nan"))) for c in cols) + " |")
    measures: list[str] = [m for m in ("name_cloze", "csg_m", "csg_m_cloze", "csg_r")
                           if m in cols]
    measures += [c for c in cols if c.startswith("min_k_")]
    numbers: dict[str, Any] = {"per_novel": per_novel}
    if {"all", "explicit", "other"} <= set(cols) and measures:
        t2, numbers["table2"] = table2(per_novel, measures)
        lines += ["", "## Table 2: Spearman rho with accuracy (* p < 0.05), top-k vs bottom-k "
                  "t-test", "", t2]
    mink = [c for c in cols if c.startswith("min_k_")]
    cov = [c for c in ("csg_m", "name_cloze", *mink[:1], "all") if c in cols]
    if mink and len(cov) >= 2:
        pm = propensity_match({n: [v.get(c, float("nan")) for c in cov]
                               for n, v in per_novel.items()}, set(group2),
                              {o: {n: v[o] for n, v in per_novel.items() if o in v}
                               for o in [*mink, "all"] if o in cols})
        numbers["propensity"] = pm
        lines += ["## Annotation contamination: propensity-score matching", "",
                  f"covariates: {', '.join(cov)}; group 2: {sorted(group2 & set(per_novel))}"]
        if "error" in pm:
            lines += ["", f"not computed: {pm['error']}"]
        else:
            lines += ["", "| group-2 novel | match | propensity (2) | propensity (match) |",
                      "|---|---|---|---|"]
            lines += [f"| {a} | {b} | {pm['propensity'][a]:.3f} | {pm['propensity'][b]:.3f} |"
                      for a, b in pm["matches"].items()]
            lines += ["", "| outcome | paired t | p | pairs |", "|---|---|---|---|"]
            lines += [f"| {o} | {_fmt(t['t'])} | {_fmt(t['p'])} | {t['n']} |"
                      for o, t in pm["tests"].items()]
    return "\n".join(lines) + "\n", numbers
