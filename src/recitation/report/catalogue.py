"""The report section of a catalogue: several works audited against one control set, one
conformal p-value per work and Benjamini-Hochberg over them (metrics/fdr.py), reported as
"these N works, false discovery rate at most q".

A work is what one input names (a book file, a JSONL file, each .txt of a folder): the
``source`` of its passages. The score is chosen by a stated rule, pinned in the audit's
manifest when it was created (:data:`recitation.verdict.pins.CATALOGUE_RULE`: the detector
family strongest on the organism benchmark that the detect run has), never by the results;
the level ``q`` is the audit setting ``fdr_q``.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from recitation.metrics.fdr import DEFAULT_Q, catalogue_tests
from recitation.records import oriented_scores
from recitation.report.sections import Section
from recitation.report.stores import detect_records
from recitation.report.table import fmt
from recitation.verdict.pins import Pins, catalogue_score, pins_of

RULE = ("Each work's statistic is the mean of the score below over m of its passages; the "
        "controls are cut at random into units of m passages; a work's conformal p-value is "
        "(1 + units scoring at least as high) / (units + 1), and the Benjamini-Hochberg "
        "procedure over the works keeps the expected share of false discoveries at most q "
        "(Bates et al. 2023: valid for conformal p-values sharing their controls). It "
        "assumes that a work the model never saw is drawn from the same distribution as the "
        "controls; a work that is merely more familiar in kind (a genre, an era, a famous "
        "text quoted elsewhere) than the controls can be found too.")


def _works(folder: Path) -> dict[str, str]:
    """The detect run's sample id of each text passage -> its work (``source``): the run
    reads ``inputs/text.jsonl``, whose samples it names ``text:<passage id>``."""
    out = {}
    path = folder / "inputs" / "text.jsonl"
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            out[f"{path.stem}:{row['id']}"] = str(row.get("source") or "")
    return out


def evidence_id(model_index: int, sample_id: str) -> str:
    """The HTML id of a text passage's evidence in the report (report.html.j2)."""
    return f"ev-{model_index}-{sample_id.partition(':')[2]}"


def _one(run: Path, works: dict[str, str], q: float, seed: int,
         model_index: int, pins: Pins) -> dict[str, Any]:
    records = list(detect_records(run))
    scores = oriented_scores(records)
    name = catalogue_score(pins, scores)
    if name is None:
        return {"error": "the detect run has none of the catalogue's scores ("
                + ", ".join(pins.catalogue) + ")"}
    d = scores[name]
    by_work: dict[str, list[float]] = {}
    for sid, v in d["member"].items():
        by_work.setdefault(works.get(sid, "?"), []).append(v)
    try:
        tests, units = catalogue_tests(by_work, list(d["control"].values()), q, seed)
    except ValueError as e:
        return {"error": str(e), "score": name}
    found = [t.work for t in tests if t.discovered]
    first: dict[str, str] = {}  # each work's first passage, in id order
    for sid, w in sorted(works.items()):
        first.setdefault(w, evidence_id(model_index, sid))
    return {"score": name, "rule": pins.catalogue_rule, "q": q, "units": units,
            "m": tests[0].passages,
            "min_p": 1 / (units + 1), "found": found,
            "works": [t.__dict__ | {"evidence": first.get(t.work)}
                      for t in sorted(tests, key=lambda t: t.p_value)]}


def collect(folder: Path, manifest: dict[str, Any]) -> dict[str, Any] | None:
    """Per model with a detect run, the catalogue's tests; None for a single work."""
    works = _works(folder)
    if len(set(works.values())) < 2:
        return None
    settings = manifest.get("settings") or {}
    q, seed = float(settings.get("fdr_q", DEFAULT_Q)), int(settings.get("seed", 0))
    pins = pins_of(manifest)
    out = {}
    for i, entry in enumerate(manifest["models"]):  # the report's model order
        if (name := entry["runs"].get("detect")) and (folder / "runs" / name /
                                                      "run.sqlite").exists():
            out[entry["spec"]] = _one(folder / "runs" / name, works, q, seed, i, pins)
    return {"n_works": len(set(works.values())), "models": out} if out else None


def headline(r: dict[str, Any], n_works: int) -> str:
    if "error" in r:
        return f"not tested: {r['error']}"
    found = ", ".join(r["found"]) or "none"
    return (f"{len(r['found'])} of {n_works} works found, false discovery rate at most "
            f"{r['q']:g}: {found} (score {r['score']}; m = {r['m']} passages per work, "
            f"{r['units']} control units, smallest possible p = {fmt(r['min_p'])})")


def _row(w: dict[str, Any]) -> list[str]:
    return [w["work"], str(w["passages"]), fmt(w["statistic"]), fmt(w["p_value"]),
            fmt(w["adjusted"]), "found" if w["discovered"] else "-"]


HEAD = ["work", "passages", "mean score", "conformal p", "BH-adjusted p", "verdict"]


def _cells(w: dict[str, Any]) -> list[str]:
    """A work's row; its name links to its first passage's evidence."""
    cells = [f"<td>{escape(c)}</td>" for c in _row(w)]
    if w.get("evidence"):
        cells[0] = f'<td><a href="#{escape(w["evidence"])}">{escape(w["work"])}</a></td>'
    return cells


def markdown(data: dict[str, Any]) -> list[str]:
    lines = [RULE, ""]
    for spec, r in data["models"].items():
        lines += [f"### {spec}", "", headline(r, data["n_works"]), ""]
        lines += [f"Why this score: {r['rule']}.", ""] if "rule" in r else []
        if "works" in r:
            lines += ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
            lines += ["| " + " | ".join(_row(w)) + " |" for w in r["works"]]
            lines.append("")
    return lines


def html(data: dict[str, Any]) -> str:
    parts = [f'<p class="note">{escape(RULE)}</p>']
    for spec, r in data["models"].items():
        parts.append(f"<h3>{escape(spec)}</h3><p>{escape(headline(r, data['n_works']))}</p>")
        if "rule" in r:
            parts.append(f'<p class="note">Why this score: {escape(r["rule"])}.</p>')
        if "works" in r:
            head = "".join(f"<th>{escape(h)}</th>" for h in HEAD)
            rows = "".join("<tr>" + "".join(_cells(w)) + "</tr>" for w in r["works"])
            parts.append(f"<table><tr>{head}</tr>{rows}</table>")
    return "".join(parts)


SECTION = Section(name="catalogue", title="Catalogue: works found, false discovery rate "
                  "controlled", collect=collect, markdown=markdown, html=html)
