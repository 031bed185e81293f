"""The Markdown summary: the same verdicts and numbers as the HTML report, as text."""

from __future__ import annotations

from typing import Any

from recitation.report.sections import markdown_sections
from recitation.report.table import ci
from recitation.report.table import fmt as _f


def _ci(interval: Any) -> str:
    return f" {c}" if (c := ci(interval)) else ""


def _esc(s: Any) -> str:
    return str(s).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _verdicts(f: dict[str, Any]) -> list[str]:
    """The verdict table (:mod:`recitation.report.table`), the verdict in bold."""
    table = f["verdict_table"]
    out = ["| " + " | ".join(table["columns"]) + " |", "|" + "---|" * len(table["columns"])]
    for row in table["rows"]:
        cells = [_esc(c) for c in row]
        cells[1] = f"**{cells[1]}**"
        out.append("| " + " | ".join(cells) + " |")
    return out


def _model(m: dict[str, Any]) -> list[str]:
    v = m["verdict"]
    out = [f"### {_esc(m['spec'])}", ""] + [f"- {_esc(r)}" for r in v["reasons"]]
    out.append(f"- rule: {_esc(v['rule_text'])} (verdict rules v{v['rules_version']}"
               + (f"; {_esc(v['error_rate'])}" if v.get("error_rate") else "") + ")")
    out.append(f"- methods chosen (by the model's access and the settings): "
               f"{', '.join(m['methods'])}" + ("; left out: " + "; ".join(
                   f"{k} ({v})" for k, v in m["skipped"].items()) if m["skipped"] else ""))
    out += [f"- {_esc(r)}" for r in (m.get("recap") or {}).get("summary", [])]
    det = m.get("detection")
    if det:
        out += ["", "| detector | primary | flagged text | FPR bound | binomial p | ROC AUC |",
                "|---|---|---|---|---|---|"]
        for name, d in sorted(det["detectors"].items()):
            bound = (f"≤ {_f(d['fpr_bound'])}{_ci(d['fpr_ci'])}" if d["reachable"]
                     else "not reachable")
            role = "yes" if name in det["primary"] else (
                "reported" if name in det.get("reported", []) else "")
            out.append(f"| {name} | {role} | "
                       f"{d['flagged']}/{d['n']}{_ci(d['flagged_ci'])} | {_esc(bound)} | "
                       f"{_f(d['p_value'])} | {_f(d['auc'])}{_ci(d['auc_ci'])} |")
    out += [f"- detect run: {_esc(w)}" for w in (det or {}).get("warnings", [])]
    costs = ", ".join(f"{c['method']} {c['calls']} calls {c['seconds']:.1f} s "
                      f"${c['cost_usd']:.4f}" for c in m.get("costs", []))
    return out + ["", f"Cost: {costs}", ""]


def render_markdown(f: dict[str, Any]) -> str:
    lines = [f"# Memorization audit {f['audit_id']}", "",
             f"Text: {', '.join(f['text'])}." + (" **Redacted** (no gold or model text)."
                                                 if f["redacted"] else ""), "",
             "## Verdict", ""] + _verdicts(f) + [""]
    for m in f["models"]:
        lines += _model(m)
    lines += markdown_sections(f)  # the registered sections (report/sections.py)
    if f.get("notices"):  # the defaults that changed what was audited (audit/notices.py)
        lines += ["## What was audited", ""] + [f"- {_esc(n)}" for n in f["notices"]] + [""]
    lines += ["## Controls", "", f"{f['controls']['reason']} ({f['controls']['n']} passages)",
              "", "## What the verdict does not mean", ""]
    lines += [f"- {s}" for s in f["does_not_mean"]]
    return "\n".join(lines) + "\n"
