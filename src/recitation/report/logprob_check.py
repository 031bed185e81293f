"""The report section of the log-probability integrity check (models/integrity.py, run by a
detect run before its first scoring call and stored in its run store under
``logprob_check:<model>``): each model's invariants with their figures and tolerances, and
the detectors a failed check left out (or that ``--trust-logprobs`` ran anyway).

It reads the run stores alone (the stored report and the detect records' errors), never a
model: :func:`left_out` also feeds the "left out" line of each model's details."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from recitation.records import LOGPROB_CHECK_META, LOGPROB_WITHHELD
from recitation.report.sections import Section
from recitation.report.stores import detect_records, detect_runs
from recitation.report.table import fmt
from recitation.runs.store import RunStore

WHAT = ("Before a detect run uses a model's log-probabilities, a few fixed public-domain "
        "texts are scored (and two greedy continuations generated) and the answers held to "
        "invariants any correct causal language model satisfies: finite, at most 0, not "
        "constant; the same when scored again or in a batch; unchanged when more text "
        "follows; equal to a greedy generation's own; a repeated passage predicted. When one "
        "fails, the detectors that read log-probabilities are left out for that model "
        "(--trust-logprobs runs them anyway); detectors that only generate still run.")
NOT_GUARANTEED = ("What it does not guarantee: it checks that the numbers are consistent "
                  "with each other, not that they come from the claimed weights. A "
                  "consistently wrong model (another model, a different fine-tune, every "
                  "number mis-scaled alike in scoring and generation) passes; small errors "
                  "within the tolerances pass; a server that answers these texts correctly "
                  "and others wrongly passes.")


def _checks(run: Path) -> list[dict[str, Any]]:
    with RunStore(run) as store:
        meta = store.all_meta()
    return [v for k, v in sorted(meta.items()) if k.startswith(LOGPROB_CHECK_META)]


def left_out(run: Path) -> dict[str, str]:
    """The detector families the check left out of a detect run, with the reason."""
    out: dict[str, str] = {}
    for rec in detect_records(run):
        for err in rec.errors:
            family, _, why = err.partition(": ")
            if LOGPROB_WITHHELD in why and family not in out:
                out[family] = why[why.index(LOGPROB_WITHHELD):]
    return out


def collect(folder: Path, manifest: dict[str, Any]) -> dict[str, Any] | None:
    """``{"models": [{"spec", "checks": [...], "left_out": {...}}]}`` for the models whose
    detect run checked log-probabilities."""
    models = [{"spec": spec, "checks": checks, "left_out": left_out(run)}
              for spec, run in detect_runs(folder, manifest) if (checks := _checks(run))]
    return {"models": models} if models else None


def _summary(m: dict[str, Any], check: dict[str, Any]) -> str:
    rep = check["report"]
    failed = [r["name"] for r in rep["results"] if r["outcome"] == "failed"]
    if not failed:
        return f"{m['spec']}: passed"
    head = f"{m['spec']}: FAILED ({', '.join(failed)})"
    if check.get("trusted"):
        return head + "; trusted anyway (--trust-logprobs): the detectors used them"
    gone = ", ".join(sorted(m["left_out"])) or "none"
    return head + f"; left out: {gone} (--trust-logprobs runs them)"


def _rows(check: dict[str, Any]) -> list[list[str]]:
    return [[r["name"], r["outcome"], fmt(r["figure"]), f"{r['bound']} {fmt(r['tolerance'])}",
             r["measures"]] for r in check["report"]["results"]]


COLUMNS = ["invariant", "result", "figure", "tolerance", "measures"]


def markdown(data: dict[str, Any]) -> list[str]:
    lines = [WHAT, ""]
    for m in data["models"]:
        for check in m["checks"]:
            lines += [f"- {_summary(m, check)}", "", "| " + " | ".join(COLUMNS) + " |",
                      "|" + "---|" * len(COLUMNS)]
            lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"
                      for row in _rows(check)] + [""]
    return lines + [NOT_GUARANTEED]


def html(data: dict[str, Any]) -> str:
    parts = [f'<p class="note">{escape(WHAT)}</p>']
    head = "".join(f"<th>{escape(c)}</th>" for c in COLUMNS)
    for m in data["models"]:
        for check in m["checks"]:
            body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>"
                           for row in _rows(check))
            parts.append(f"<p>{escape(_summary(m, check))}</p>"
                         f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    return "".join(parts) + f'<p class="note">{escape(NOT_GUARANTEED)}</p>'


SECTION = Section(name="logprob_check", title="Can the log-probabilities be trusted? "
                  "(integrity check)", collect=collect, markdown=markdown, html=html)
