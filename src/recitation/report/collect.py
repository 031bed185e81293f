"""The findings of an audit, read from its folder alone (manifest + run stores).

:func:`collect` returns one JSON-serializable dict: every number the HTML, Markdown and
JSON reports show, so the three never disagree. It reads ``audit.json`` and each run's
``run.sqlite`` (config, results, stored detect report, calls) and never the user's files
nor a model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from recitation.errors import StoreError
from recitation.metrics.null import DEFAULT_ALPHA
from recitation.metrics.weighted import weighted_rouge
from recitation.records import PrefixProbeRecord
from recitation.report.evidence import evidence_item
from recitation.report.logprob_check import left_out as logprob_left_out
from recitation.report.numbers import detection, extraction_stats, null_summary
from recitation.report.recap import recap_group, recap_summary
from recitation.report.sections import collect_sections
from recitation.report.stores import detect_records
from recitation.report.table import verdict_table
from recitation.report.verdict_inputs import verdict_inputs
from recitation.runs.audits import RECAP_RUNS, load_manifest
from recitation.runs.store import RunStore
from recitation.verdict import decide
from recitation.verdict.pins import Pins, pins_of

DOES_NOT_MEAN = [
    "Finding no verbatim reproduction is not proof that the text was absent from training: "
    "a model can have trained on a text and not reproduce it under these prompts, sizes "
    "and decoding settings (greedy, short continuations).",
    "A detector flag says the model treats the text differently from the controls; it is "
    "evidence of exposure, not a measure of how much was copied, and it relies on the "
    "controls being text the model has not seen, of the same kind.",
    "Reproduction of famous or formulaic text (quotations, lists) can come from copies "
    "elsewhere in the training data, not from this edition.",
    "The FPR bound is for one new unseen text; with many detectors, the report uses one "
    "primary score per family chosen before the run.",
]


def _run(folder: Path, name: str | None) -> Path | None:
    if not name:
        return None
    d = folder / "runs" / name
    if not (d / "run.sqlite").exists():
        raise StoreError(f"audit {folder.name}: run {name} is missing")
    return d


def _prompts(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """The exact request of each prefix-probing generation, by its prompt text, recovered
    from the call log: for runs stored before the request was kept with its result."""
    out: dict[str, Any] = {}
    for c in calls:
        try:
            req = json.loads(c["request"])
        except (TypeError, ValueError):
            continue
        reqs = req if isinstance(req, list) else req.get("requests", [req])
        for r in reqs if isinstance(reqs, list) else []:
            if not isinstance(r, dict):
                continue
            key = r.get("prompt")
            if key is None and r.get("messages"):
                key = r["messages"][-1].get("content")
            if isinstance(key, str):
                out.setdefault(key, r)
    return out


def _costs(store: RunStore, method: str) -> dict[str, Any]:
    t = store.call_totals()
    return {"method": method, "calls": t["calls"], "input_tokens": t["input_tokens"],
            "output_tokens": t["output_tokens"], "seconds": round(t["latency_s"] or 0.0, 3),
            "cost_usd": t["cost_usd"], "served_from_cache": t.get("served_from_cache", 0)}


def _provenance(store: RunStore) -> dict[str, Any]:
    meta = store.all_meta()
    cfg = meta.get("config") or {}
    return {"run_id": meta.get("run_id"), "job": meta.get("job"), "seed": meta.get("seed"),
            "created": meta.get("created"), "finished": meta.get("finished"),
            "status": meta.get("status"), "versions": meta.get("versions"),
            "git_commit": meta.get("git_commit"), "model": cfg.get("model"),
            "params": cfg.get("params"), "input_files": meta.get("input_files"),
            "model_weights": meta.get("model_provenance")}


def _prefix(run: Path, settings: dict[str, Any], redact: bool, pins: Pins
            ) -> dict[str, Any]:
    with RunStore(run) as store:
        records = list(store.results("prefix_probe"))
        try:
            typed = {i: PrefixProbeRecord.model_validate(r) for i, r in records}
        except ValidationError as e:
            raise StoreError(f"run {run.name}: a record is not a prefix-probing record of "
                             f"this version ({e.errors()[0]['loc']}: {e.errors()[0]['msg']})"
                             ) from None
        # runs stored before the request was kept with its result: from the call log
        prompts = {} if all(t.request for t in typed.values()) else _prompts(store.calls())
        cost, prov = _costs(store, "prefix_probe"), _provenance(store)
    evidence = [evidence_item(i, r, typed[i].request or prompts.get(typed[i].prefix),
                              min_tokens=settings["min_tokens"], redact=redact,
                              verbatim_words=pins.verbatim_words)
                for i, r in records]
    groups: dict[str, Any] = {}
    for g in ("text", "control"):
        ev = [e for e in evidence if e["group"] == g]
        rs = [r for _, r in records if r.get("group") == g]
        groups[g] = extraction_stats(ev) | {"rouge_l_weighted": weighted_rouge(
            [r.get("rouge_l_recall") for r in rs], [r.get("target_words", 0) for r in rs])
            if rs else None}
    if any("null" in r for _, r in records):  # the run had a reference model
        groups["text"]["null"] = null_summary(
            [e for e in evidence if e["group"] == "text"],
            float(settings.get("null_alpha", DEFAULT_ALPHA)))
    return {"groups": groups, "evidence": evidence, "cost": cost, "provenance": prov}


def _detect(run: Path, pins: Pins) -> dict[str, Any]:
    with RunStore(run) as store:
        report = store.get_meta("detect_report") or {}
        cost, prov = _costs(store, "detect"), _provenance(store)
    return detection(report, detect_records(run), pins) | {"cost": cost, "provenance": prov}


def _model(folder: Path, entry: dict[str, Any], manifest: dict[str, Any]) -> dict[str, Any]:
    settings, redact = manifest["settings"], bool(manifest.get("redact"))
    pins = pins_of(manifest)
    out: dict[str, Any] = {"spec": entry["spec"], "methods": entry["methods"],
                           "skipped": entry["skipped"], "costs": [], "provenance": {}}
    if run := _run(folder, entry["runs"].get("prefix_probe")):
        px = _prefix(run, settings, redact, pins)
        out |= {"extraction": px["groups"], "evidence": px["evidence"]}
        out["costs"].append(px["cost"])
        out["provenance"]["prefix_probe"] = px["provenance"]
    if recap := _recap(folder, entry, settings, redact, pins.verbatim_words):
        out["recap"] = recap
        out["costs"] += recap.pop("costs")
        out["provenance"] |= recap.pop("provenance")
    if run := _run(folder, entry["runs"].get("detect")):
        dx = _detect(run, pins)
        out["costs"].append(dx.pop("cost"))
        out["provenance"]["detect"] = dx.pop("provenance")
        out["detection"] = dx
        if gone := logprob_left_out(run):  # a failed integrity check: report/logprob_check.py
            out["skipped"] = out["skipped"] | gone
            out["methods"] = [m for m in out["methods"] if m not in gone]
    if run := _run(folder, entry["runs"].get("trace")):  # its section: report/tracing.py
        with RunStore(run) as store:
            out["costs"].append(_costs(store, "simpletrace"))
    out["verdict"] = decide(verdict_inputs(out, manifest)).as_dict()
    return out


def _recap(folder: Path, entry: dict[str, Any], settings: dict[str, Any],
           redact: bool, verbatim_words: int) -> dict[str, Any] | None:
    """RECAP's findings per group (:mod:`recitation.report.recap`), or None without runs."""
    groups: dict[str, Any] = {}
    evidence: list[dict[str, Any]] = []
    costs, prov = [], {}
    rounds = int(settings.get("recap_rounds", 5))
    for group, key in RECAP_RUNS.items():
        if run := _run(folder, entry["runs"].get(key)):
            found = recap_group(run, group, min_tokens=settings["min_tokens"],
                                rounds=rounds, redact=redact, verbatim_words=verbatim_words)
            evidence += found.pop("evidence")
            groups[group] = found
            with RunStore(run) as store:
                costs.append(_costs(store, f"recap ({group})"))
                prov[key] = _provenance(store)
    if not groups:
        return None
    return {"groups": groups, "evidence": evidence, "costs": costs, "provenance": prov,
            "summary": recap_summary(groups, rounds)}


def collect(folder: Path, *, redact: bool | None = None) -> dict[str, Any]:
    """Every finding of the audit in ``folder`` (``redact``: override the audit's
    setting)."""
    manifest = load_manifest(folder)
    if redact is not None:
        manifest["redact"] = redact
    models = [_model(folder, e, manifest) for e in manifest["models"]]
    return {"audit_id": manifest["audit_id"], "created": manifest["created"],
            "redacted": bool(manifest.get("redact")), "text": manifest["text"],
            "controls": manifest["controls"], "settings": manifest["settings"],
            "inputs": manifest["inputs"], "input_hashes": manifest["input_hashes"],
            "notices": list(manifest.get("notices") or []),
            "models": models, "verdict_table": verdict_table(models),
            "sections": collect_sections(folder, manifest),
            "does_not_mean": DOES_NOT_MEAN}
