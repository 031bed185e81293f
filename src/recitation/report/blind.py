"""The report section of the blind baseline (detect/blind.py, Das et al., 2024): can a
bag-of-words classifier that never queries the model tell the text from its controls? Its
AUC with the interval, the threshold, what the verdict did with it and the words that tell
the sets apart. One result per set of text and controls (the models of an audit share
theirs, so it is shown once unless they differ)."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from recitation.report.sections import Section
from recitation.report.stores import detect_runs
from recitation.runs.store import RunStore
from recitation.verdict import Blind

WHAT = ("A classifier that never queries the model (a bag of words: word 1- and 2-grams, "
        "logistic regression, each passage scored by a model fitted without it) tries to "
        "tell the text from the controls; its ROC AUC has a 95% bootstrap interval. Near "
        "0.5 the controls are like the text in words. When the interval lies above the "
        "threshold, a detector's success could come from that difference alone (Das et "
        "al., 2024): the verdict does not count the detectors, says why and names the "
        "telling words; reproduction evidence still counts.")
NOT_GUARANTEED = ("What it does not guarantee: a quiet baseline does not show the controls "
                  "alike in every way (style, era or edition can differ in ways a bag of "
                  "words misses), and with few passages its interval is wide.")


def collect(folder: Path, manifest: dict[str, Any]) -> dict[str, Any] | None:
    """``{"results": [{"models": [...], "blind": {...}}, ...]}``: each distinct result
    with the models whose detect run computed it."""
    results: list[dict[str, Any]] = []
    for spec, run in detect_runs(folder, manifest):
        with RunStore(run) as store:
            blind = (store.get_meta("detect_report") or {}).get("blind")
        if not blind:
            continue
        same = next((r for r in results if r["blind"] == blind), None)
        if same is None:
            results.append({"models": [spec], "blind": blind})
        else:
            same["models"].append(spec)
    return {"results": results} if results else None


def _lines(r: dict[str, Any]) -> list[str]:
    b = Blind.model_validate(r["blind"])
    verdict = ("the verdict does not count the detectors" if b.separates else
               "the detectors count in the verdict")
    return [f"{b.describe()}; {verdict}", f"models: {', '.join(r['models'])}"]


def markdown(data: dict[str, Any]) -> list[str]:
    lines = [WHAT, ""]
    for r in data["results"]:
        lines += [f"- {x}" for x in _lines(r)] + [""]
    return lines + [NOT_GUARANTEED]


def html(data: dict[str, Any]) -> str:
    parts = [f'<p class="note">{escape(WHAT)}</p>']
    for r in data["results"]:
        cls = "blind-separates" if r["blind"]["separates"] else "blind-quiet"
        items = "".join(f"<li>{escape(x)}</li>" for x in _lines(r))
        parts.append(f'<ul class="{cls}">{items}</ul>')
    return "".join(parts) + f'<p class="note">{escape(NOT_GUARANTEED)}</p>'


SECTION = Section(name="blind_baseline", title="Do the controls differ from the text? "
                  "(blind baseline)", collect=collect, markdown=markdown, html=html)
