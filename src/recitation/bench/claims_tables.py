"""Markdown of ``recitation bench claims`` (:mod:`recitation.bench.claims_analysis`): every
table is written from the stored records, never by hand."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from recitation.bench.claims import SUPPORT_COUNT, supported
from recitation.bench.claims_analysis import BLIND_ACCESS, LEVEL


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _ci(ci: Sequence[float] | None) -> str:
    return "" if not ci else f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def _p(p: float | None) -> str:
    return "-" if p is None else ("< 0.001" if p < 0.001 else f"{p:.3f}")


def _alpha(a: float) -> str:
    return f"{100 * a:g}%"


def _dose(group: str) -> str:
    if group == "all":
        return "every member"
    return f"members seen {'once' if group == '1' else f'{group} times'}"


def sizes_table(res: dict[str, Any]) -> list[str]:
    lines = ["| organism | role | members | calibration non-members | test non-members | "
             "FPRs measured |", "|---|---|---:|---:|---:|---|"]
    for o in res["organisms"]:
        ok = [_alpha(a) for a in res["alphas"] if supported(a, o["calibration"], o["test"])]
        lines.append(f"| `{o['name']}` | {'development' if o['dev'] else 'test'} | "
                     f"{o['members']:,} | {o['calibration']:,} | {o['test']:,} | "
                     f"{', '.join(ok) or 'none'} |")
    for o in res["organisms"]:
        if o.get("builds", 1) > 1:
            lines += ["", f"`{o['name']}`'s units scored {o['builds']} builds of it (rebuilt "
                      "from the same config on another host, whose float arithmetic gives "
                      f"other weights: {'; '.join(o['hosts'])}); its rates mix them."]
    return lines


def dev_table(res: dict[str, Any]) -> list[str]:
    lines = ["| method | score | TPR at 1% FPR (development) | AUC | chosen |",
             "|---|---|---:|---:|---|"]
    for r in res["development"]["variants"]:
        lines.append(f"| {r['method']} | `{r['score']}` | {_pct(r['tpr_at_1'])} | "
                     f"{r['auc']:.3f} | {'yes' if r['chosen'] else ''} |")
    return lines


def _standing(r: dict[str, Any], verdict: dict[str, Any] | None) -> str:
    if r["access"] == BLIND_ACCESS:
        return "blind baseline"
    if not r["supported"]:
        return "not ranked (FPR not measured)"
    if verdict is None or "tpr" not in r:
        return "-"
    if verdict["winner"] == r["method"]:
        return "**winner**"
    if verdict["best"] == r["method"]:
        return "best, no winner"
    return "tied with the best" if r["method"] in verdict["tied"] else "below the best"


def _scored(r: dict[str, Any]) -> str:
    """The members and calibration and test non-members a row's method scored, summed over
    the organisms (a generating unit: its subsample; CAMIA: less its population)."""
    return " / ".join(f"{sum(o[k] for o in r['organisms']):,}"
                      for k in ("n_members", "n_calibration", "n_test"))


def rate_table(res: dict[str, Any], group: str, alpha: float) -> list[str]:
    rows = [r for r in res["rows"] if r["dose"] == group and r["alpha"] == alpha]
    if not rows:
        return []
    names = [o["organism"] for o in rows[0]["organisms"]]
    verdict = {v["access"]: v for v in res["verdicts"]
               if v["dose"] == group and v["alpha"] == alpha}
    lines = [f"| access | method | scored: members / calibration / test non-members | "
             f"{' | '.join(f'TPR `{n}`' for n in names)} | pooled TPR "
             "[95%] | spread | FPR read [95%] | above chance (Holm p) | standing |",
             "|---|---|---:|" + "---:|" * len(names) + "---:|---:|---:|---:|---|"]
    order = sorted(rows, key=lambda r: (r["access"] == BLIND_ACCESS, r["access"],
                                        -r.get("tpr", -1)))
    for r in order:
        each = " | ".join(_pct(o.get("tpr")) for o in r["organisms"])
        spread = ("-" if "tpr" not in r else
                  f"{_pct(r['tpr_min'])}-{_pct(r['tpr_max'])}")
        lines.append(f"| {r['access']} | `{r['method']}` | {_scored(r)} | {each} | "
                     f"{_pct(r.get('tpr'))}"
                     f"{_ci(r.get('tpr_ci'))} | {spread} | {_pct(r.get('fpr'))}"
                     f"{_ci(r.get('fpr_ci'))} | {_p(r.get('p_above_chance_holm'))} | "
                     f"{_standing(r, verdict.get(r['access']))} |")
    return lines


def verdict_table(res: dict[str, Any]) -> list[str]:
    lines = ["| FPR | members | access level | winner | best (pooled TPR) | tied with the best "
             "(Holm p >= 0.05) | largest Holm p against the best |",
             "|---|---|---|---|---|---|---:|"]
    for v in sorted(res["verdicts"], key=lambda v: (-v["alpha"], v["dose"], v["access"])):
        lines.append(f"| {_alpha(v['alpha'])} | {_dose(v['dose'])} | {v['access']} | "
                     f"{'`' + v['winner'] + '`' if v['winner'] else 'no winner'} | "
                     f"`{v['best']}` ({_pct(v['tpr'])}) | "
                     f"{', '.join(f'`{t}`' for t in v['tied']) or '-'} | "
                     f"{_p(v['p_holm_max'])} |")
    return lines


def cost_table(res: dict[str, Any]) -> list[str]:
    """Wall seconds per organism and unit (the organism's own build; cached calls count)."""
    lines = ["| organism | unit | calls | from the cache | wall s |", "|---|---|---:|---:|---:|"]
    for o in res["organisms"]:
        for c in o["costs"]:
            lines.append(f"| `{o['name']}` | {c['unit']}"
                         f"{' (built)' if c.get('built') else ''}"
                         f"{' on ' + c['host'] if c.get('host') else ''} | {c.get('calls', '-')} | "
                         f"{c.get('from_cache', '-')} | {c['wall_seconds']:,.0f} |")
    return lines


def markdown(res: dict[str, Any]) -> str:
    """The whole report of one ``recitation bench claims`` run."""
    n_pairs = len(res["pairs"])
    tests = [o["name"] for o in res["organisms"] if not o["dev"]]
    out = [f"Rests on {len(tests)} test organism(s) ({', '.join(f'`{t}`' for t in tests)}) "
           f"of the {len(res.get('config', {}).get('seeds', tests))} configured; "
           f"{res['n_boot']} bootstrap resamples.", "",
           "**Organisms and the FPRs their sizes measure** (an FPR is measured when the "
           f"calibration non-members leave at least {SUPPORT_COUNT} above the conformal "
           f"threshold and the test non-members expect at least {SUPPORT_COUNT} false "
           "positives):", "", *sizes_table(res), "",
           f"**Choices fixed on the development organism** (`{res['development']['organism']}`"
           ", never read by the tables below):", "", *dev_table(res), "",
           f"**Who wins** (exact McNemar on the same members, Holm over all {n_pairs} pairs "
           f"compared; a winner beats every other method of its level at {LEVEL}):", "",
           *verdict_table(res), ""]
    for alpha in res["alphas"]:
        for group in dict.fromkeys(r["dose"] for r in res["rows"]):
            table = rate_table(res, group, alpha)
            if table:
                out += [f"**At {_alpha(alpha)} FPR, {_dose(group)}** (conformal threshold "
                        "on each organism's calibration half; TPR interval: bootstrap over "
                        "organisms, members and calibration non-members; FPR read on the "
                        "test halves, Clopper-Pearson):", "", *table, ""]
    out += ["**What it cost** (this machine; an organism's line: its build or reuse):", "",
            *cost_table(res), ""]
    return "\n".join(out)
