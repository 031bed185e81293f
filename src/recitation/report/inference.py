"""The report section of dataset inference (Maini et al., 2024; metrics/dataset_inference.py):
for each model whose audit ran detectors against controls, every registered detector's
score of each passage is a feature, the text is the suspect set and the controls the
validation set; one p-value for the whole text, the features' weights, the assumption it
rests on, and the blind baselines' warning when they already separate the two sets."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

import numpy as np

from recitation.metrics.dataset_inference import dataset_inference
from recitation.records import DetectRecord, oriented_scores
from recitation.report.sections import Section
from recitation.report.stores import detect_records, detect_runs
from recitation.report.table import fmt
from recitation.runs.store import RunStore

ASSUMPTION = ("Dataset inference (Maini et al., 2024) combines every detector's score in a "
              "linear model fitted on half of the text and of the controls, and tests the "
              "other halves (one-sided t-test: the text scores as more member-like). It rests "
              "on one assumption: the controls are drawn from the same distribution as the "
              "text (same source and kind, only unseen by the model).")


def _features(records: list[DetectRecord]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Text and control matrices over the detectors that scored every passage."""
    scores = oriented_scores(records)
    ids = {lab: sorted({r.sample_id for r in records if r.label == lab})
           for lab in ("member", "control")}
    names = sorted(n for n, d in scores.items()
                   if all(set(ids[lab]) <= set(d[lab]) for lab in ids))
    mats = [np.array([[scores[n][lab][i] for n in names] for i in ids[lab]], dtype=float)
            .reshape(len(ids[lab]), len(names)) for lab in ("member", "control")]
    return mats[0], mats[1], names


def _one(run: Path, seed: int) -> dict[str, Any]:
    records = list(detect_records(run))
    with RunStore(run) as store:
        report = store.get_meta("detect_report") or {}
    text, controls, names = _features(records)
    warnings = list(report.get("warnings") or [])  # the shift guard's and the blind baseline's
    if not names:
        return {"error": "no detector scored every passage", "warnings": warnings}
    try:
        res = dataset_inference(text, controls, names, seed=seed)
    except ValueError as e:
        return {"error": str(e), "warnings": warnings}
    return res.to_dict() | {"features": len(names), "warnings": warnings}


def collect(folder: Path, manifest: dict[str, Any]) -> dict[str, Any] | None:
    """``{model spec: the test's result}`` for the models with a detect run."""
    seed = int((manifest.get("settings") or {}).get("seed", 0))
    out = {spec: _one(run, seed) for spec, run in detect_runs(folder, manifest)}
    return out or None


def _summary(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"not computed: {r['error']}"
    return (f"p = {fmt(r['p_value'])} ({r['test']} t = {fmt(r['t'])}; held out "
            f"{r['n_suspect']} text and {r['n_validation']} control passages; "
            f"{r['features']} features)")


def _top(r: dict[str, Any], k: int = 6) -> list[tuple[str, float]]:
    return sorted((r.get("weights") or {}).items(), key=lambda x: -abs(x[1]))[:k]


def markdown(data: dict[str, Any]) -> list[str]:
    lines = [ASSUMPTION, ""]
    for spec, r in data.items():
        lines += [f"### {spec}", "", f"- {_summary(r)}"]
        lines += [f"- warning: {w}" for w in r.get("warnings", [])]
        if top := _top(r):
            lines.append("- largest weights (negative: the text's side): " + ", ".join(
                f"{n} {fmt(w)}" for n, w in top))
        lines.append("")
    return lines


def html(data: dict[str, Any]) -> str:
    parts = [f'<p class="note">{escape(ASSUMPTION)}</p>']
    for spec, r in data.items():
        items = [f"<li>{escape(_summary(r))}</li>"]
        items += [f"<li>warning: {escape(w)}</li>" for w in r.get("warnings", [])]
        if top := _top(r):
            items.append("<li>largest weights (negative: the text's side): " + escape(
                ", ".join(f"{n} {fmt(w)}" for n, w in top)) + "</li>")
        parts.append(f"<h3>Dataset inference: {escape(spec)}</h3><ul>{''.join(items)}</ul>")
    return "".join(parts)


SECTION = Section(name="dataset_inference", title="Dataset inference", collect=collect,
                  markdown=markdown, html=html)
