"""The report section of a whole-book audit: the share of the book each model reproduces,
with its interval for the whole book.

Shown when the audited passages were drawn at random by chapter (audit/sampling.py; the
design's record is in the audit manifest under ``sampling``). Each sampled passage weighs
as the book passages it stands for; the share of passages whose prefix probe reproduced the
continuation verbatim (the probe's rule), and, for an audit without controls, the share
reproduced beyond chance under the reproduction null, each with its Korn-Graubard interval
(metrics/sampling.py). Passages whose probe failed are left out of the estimate and
counted.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from recitation.metrics.null import DEFAULT_ALPHA, beyond_chance
from recitation.metrics.sampling import passage_weights, weighted_share
from recitation.records import PrefixProbeRecord
from recitation.report.sections import Section
from recitation.runs.store import RunStore

WHAT = ("Passages were drawn at random within the book's chapters, so each stands for the "
        "passages of its chapter; the shares below are estimates for the whole book, with "
        "95% intervals (Clopper-Pearson at the effective sample size, Korn and Graubard "
        "1998; conservative: they ignore what stratification gains and the finite "
        "population). Verbatim: the model, given a passage's first half, continues it word "
        "for word (the prefix probe's rule).")


def _records(run: Path) -> dict[str, PrefixProbeRecord]:
    """The text passages' records by passage id."""
    with RunStore(run) as store:
        recs = {i: PrefixProbeRecord.model_validate(r)
                for i, r in store.results("prefix_probe")}
    return {i: r for i, r in recs.items() if r.group == "text"}


def _model(run: Path, w: dict[str, float], work: dict[str, str], alpha: float
           ) -> dict[str, Any]:
    recs = _records(run)
    ids = [i for i in w if i in recs]
    out: dict[str, Any] = {"missing": len(w) - len(ids)}
    if not ids:
        return out | {"error": "no sampled passage was probed"}
    ws = [w[i] for i in ids]
    verbatim = {i: recs[i].verdict == "verbatim" for i in ids}
    out["verbatim"] = weighted_share([verbatim[i] for i in ids], ws).to_dict()
    if len(set(work.values())) > 1:  # several books: each one's share too
        out["by_work"] = {b: weighted_share([verbatim[i] for i in mine],
                                            [w[i] for i in mine]).to_dict()
                          for b in sorted(set(work.values()))
                          if (mine := [i for i in ids if work[i] == b])}
    if any(recs[i].null for i in ids):
        flags = [beyond_chance((recs[i].null or {}).get("logprob"), len(recs), alpha)
                 for i in ids]
        out["beyond_chance"] = weighted_share(flags, ws).to_dict()
    return out


def collect(folder: Path, manifest: dict[str, Any]) -> dict[str, Any] | None:
    """The design and each probed model's shares, for an audit drawn by chapter."""
    design = manifest.get("sampling")
    if not design:
        return None
    w = passage_weights(design["strata"])
    work = {i: st["work"] for st in design["strata"] for i in st["ids"]}
    alpha = float((manifest.get("settings") or {}).get("null_alpha", DEFAULT_ALPHA))
    models = {}
    for entry in manifest["models"]:
        run = folder / "runs" / entry["runs"].get("prefix_probe", "-")
        if (run / "run.sqlite").exists():
            models[entry["spec"]] = _model(run, w, work, alpha)
    works = sorted({s["work"] for s in design["strata"]})
    return {"design": design["design"], "population": design["population"],
            "sampled": len(w), "strata": len(design["strata"]), "works": works,
            "models": models}


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def share_text(s: dict[str, Any], of: str = "the book") -> str:
    """``4.2% of the book (2 of 12 sampled passages), 95% interval [0.5%, 27.1%]``."""
    return (f"{_pct(s['share'])} of {of} ({s['positives']} of {s['n']} sampled "
            f"passages), {round(100 * s['confidence'])}% interval [{_pct(s['low'])}, "
            f"{_pct(s['high'])}]")


def lines(data: dict[str, Any]) -> list[str]:
    """One line per model and share (the console and Markdown say the same)."""
    head = (f"whole book ({', '.join(data['works'])}: {data['population']:,} passages in "
            f"{data['strata']} strata; {data['sampled']} sampled, {data['design']})")
    out = [head]
    for spec, m in data["models"].items():
        if "error" in m:
            out.append(f"{spec}: {m['error']}")
            continue
        miss = f" ({m['missing']} sampled passages not probed)" if m["missing"] else ""
        of = "the books together" if m.get("by_work") else "the book"
        out.append(f"{spec}: reproduced verbatim: {share_text(m['verbatim'], of)}{miss}")
        out += [f"{spec}: {b}: reproduced verbatim: {share_text(s)}"
                for b, s in m.get("by_work", {}).items()]
        if bc := m.get("beyond_chance"):
            out.append(f"{spec}: reproduced beyond chance (reproduction null): "
                       f"{share_text(bc)}")
    return out


def markdown(data: dict[str, Any]) -> list[str]:
    first, *rest = lines(data)
    return [WHAT, "", f"{first}:", "", *[f"- {x}" for x in rest]]


def html(data: dict[str, Any]) -> str:
    first, *rest = lines(data)
    items = "".join(f"<li>{escape(x)}</li>" for x in rest)
    return f'<p class="note">{escape(WHAT)}</p><p>{escape(first)}</p><ul>{items}</ul>'


SECTION = Section(name="whole_book", title="The whole book", collect=collect,
                  markdown=markdown, html=html)
