"""The ground-truth benchmark's tables, from the records its runs stored.

Definitions (each row is one method on one checkpoint, for one dose group):

* **AUC** — ROC AUC of the method's score (oriented so that higher means member) for the
  members of that dose (``all``: every member) against every non-member; the interval is a
  95% stratified percentile bootstrap (members and non-members resampled separately, seeded).
* **TPR@1% / TPR@5%** — the largest true-positive rate among ROC points whose FPR is at most
  1% / 5% (with 15-24 non-members, 1% FPR means no non-member flagged at all), same bootstrap.
* **length baseline** — the AUC of the passage's length in characters: what a detector that
  reads only length would reach (the blind-baseline check; ~0.5 when the split is sound).
* **extraction** (prefix probing) — the share of passages whose greedy continuation of the
  first half reproduces the true second half exactly (``exact``: longest common word prefix
  covers all of it) and the share with at least one 40-token verbatim passage (RECAP's
  metric: ``min_tokens=40``, up to 5 mismatched tokens), each with a Clopper-Pearson interval;
  the longest common prefix and ROUGE-L F1 as scores give AUCs too.
* **overlap** (pearl-v2 table 4) — per group, the share flagged as *memorized* by PEARL
  (bit-flip sensitivity > tau_b = 0.2, the paper's threshold) and as *member* by perplexity
  (exp(LOSS) < 60, the paper's threshold), and by both.
* **costs** — per unit and checkpoint: model calls, input / output tokens, CPU seconds
  (process time, model load included) and wall seconds.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from recitation.bench.extraction import (
    extract_errors,
    extract_rows,
    extract_selection,
    method_cost_rows,
)
from recitation.bench.groundtruth import (
    GroundTruthConfig,
    Progress,
    UnitOutcome,
    run_units,
)
from recitation.bench.groups import group_of, group_order, share_row
from recitation.bench.lowfpr import calibration_half, heldout_rates
from recitation.errors import ConfigError
from recitation.metrics.spans import verbatim_passages
from recitation.metrics.stats import (
    roc_auc,
    stratified_bootstrap_ci,
    tpr_at_fpr,
)
from recitation.organism.data import Passage

PEARL_TAU = 0.2  # pearl-v2 section 5: tau_b = 0.2 calibrated on RefinedWeb
PPL_THRESHOLD = 60.0  # pearl-v2 section 5 / table 4: perplexity threshold of the MIA
Stat = Callable[[list[int], list[float]], float]


def _tpr(fpr: float) -> Stat:
    return lambda y, s: tpr_at_fpr(y, s, fpr)


def roc_row(labels: Sequence[int], scores: Sequence[float], n_boot: int,
            seed: int) -> dict[str, Any]:
    """AUC, TPR at 1% and 5% FPR, each with its bootstrap interval."""
    y, s = list(labels), list(scores)
    row: dict[str, Any] = {"n_members": sum(y), "n_nonmembers": len(y) - sum(y)}
    for name, stat in (("auc", roc_auc), ("tpr_at_1", _tpr(0.01)), ("tpr_at_5", _tpr(0.05))):
        row[name] = stat(y, s)
        row[f"{name}_ci"] = list(stratified_bootstrap_ci(y, s, stat, n_boot=n_boot,
                                                         seed=seed))
    return row


def dose_groups(passages: Sequence[Passage]) -> list[str]:
    doses = sorted({p.dose for p in passages if p.member})
    return ["all"] + [str(d) for d in doses]


def _in_group(p: Passage, group: str) -> bool:
    return p.member and (group == "all" or str(p.dose) == group)


def score_rows(name: str, family: str, epoch: int, values: dict[str, float],
               passages: dict[str, Passage], groups: list[str], n_boot: int,
               seed: int) -> list[dict[str, Any]]:
    """One row per dose group for a score (``values``: passage id -> member-high score):
    in-sample ROC figures with bootstrap intervals, and held-out rates at 1% and 0.1% FPR
    (:mod:`recitation.bench.lowfpr`)."""
    out = []
    by_id = {pid: v for pid, v in values.items() if not passages[pid].member}
    negatives = list(by_id.values())
    calibration = calibration_half((p.id for p in passages.values() if not p.member), seed)
    for group in groups:
        positives = [v for pid, v in values.items() if _in_group(passages[pid], group)]
        if not positives or not negatives:
            continue
        labels = [1] * len(positives) + [0] * len(negatives)
        out.append({"method": name, "family": family, "epoch": epoch, "dose": group}
                   | roc_row(labels, positives + negatives, n_boot, seed)
                   | heldout_rates(positives, by_id, calibration))
    return out


def passage_id(sample_id: str) -> str:
    """``members:Novel@123`` (a detect sample id) -> ``Novel@123``."""
    return sample_id.split(":", 1)[1] if ":" in sample_id else sample_id


def detector_scores(outcome: UnitOutcome) -> dict[str, dict[str, float]]:
    """Score name -> passage id -> score oriented so that higher means member; a
    published-setting unit's (``samia@published``) scores carry its suffix."""
    suffix = outcome.unit[outcome.unit.index("@"):] if "@" in outcome.unit else ""
    out: dict[str, dict[str, float]] = {}
    for rec in outcome.records:
        for sc in rec.get("scores", []):
            v = float(sc["score"])
            if math.isfinite(v):
                pid = passage_id(str(sc["sample_id"]))
                out.setdefault(sc["detector"] + suffix, {})[pid] = (
                    v if sc["higher_means_member"] else -v)
    return out


def prefix_scores(outcome: UnitOutcome) -> dict[str, dict[str, float]]:
    return {name: {r["item_id"]: float(r[field]) for r in outcome.records}
            for name, field in (("prefix_lcp_words", "lcp_words"),
                                ("prefix_rouge_l", "rouge_l_f1"))}


def extraction_rows(outcome: UnitOutcome, passages: dict[str, Passage]) -> list[dict[str, Any]]:
    """Exact and 40-token extraction shares per group (dose groups and non-members)."""
    per: dict[str, list[tuple[bool, bool, float]]] = {}
    lcp: dict[str, list[int]] = {}
    for r in outcome.records:
        whole = r["lcp_words"] >= r["target_words"]
        has40 = verbatim_passages(r["target"], r["continuation"]).passage_count > 0
        group = group_of(passages[r["item_id"]])
        per.setdefault(group, []).append((whole, has40, float(r["rouge_l_f1"])))
        lcp.setdefault(group, []).append(int(r["lcp_words"]))
    return [{"epoch": outcome.epoch} | share_row(g, per[g])
            | {"mean_lcp_words": sum(lcp[g]) / len(lcp[g])}
            for g in sorted(per, key=group_order)]


def overlap_rows(epoch: int, loss: dict[str, float], sens: dict[str, float],
                 passages: dict[str, Passage]) -> list[dict[str, Any]]:
    """pearl-v2 table 4: % memorized (PEARL), % members (perplexity), % both, per group."""
    per: dict[str, list[tuple[bool, bool]]] = {}
    for pid in loss.keys() & sens.keys():
        mia = math.exp(-loss[pid]) < PPL_THRESHOLD  # loss is stored as -NLL (member-high)
        per.setdefault(group_of(passages[pid]), []).append((sens[pid] > PEARL_TAU, mia))
    return [{"epoch": epoch, "group": g, "n": len(v),
             "memo_pct": 100 * sum(m for m, _ in v) / len(v),
             "mia_pct": 100 * sum(a for _, a in v) / len(v),
             "both_pct": 100 * sum(m and a for m, a in v) / len(v)}
            for g, v in sorted(per.items(), key=lambda kv: group_order(kv[0]))]


def cost_row(o: UnitOutcome) -> dict[str, Any]:
    return {"epoch": o.epoch, "unit": o.unit, "status": o.status, "texts": len(o.records),
            "calls": o.calls.get("calls", 0), "input_tokens": o.calls.get("input_tokens", 0),
            "output_tokens": o.calls.get("output_tokens", 0),
            "errors": o.calls.get("errors", 0),
            "from_cache": o.calls.get("served_from_cache", 0),
            "cpu_seconds": round(o.cpu_seconds, 1),
            "wall_seconds": round(o.wall_seconds, 1), "run_dir": o.run_dir}


def length_rows(passages: Sequence[Passage], n_boot: int, seed: int) -> list[dict[str, Any]]:
    by_id = {p.id: p for p in passages}
    values = {p.id: float(len(p.text)) for p in passages}
    return score_rows("length_chars", "baseline", -1, values, by_id, dose_groups(passages),
                      n_boot, seed)


def analyse(cfg: GroundTruthConfig, manifest: dict[str, Any], passages: Sequence[Passage],
            outcomes: Sequence[UnitOutcome]) -> dict[str, Any]:
    """The benchmark's results (JSON-ready): detection, extraction, overlap, costs, plot data."""
    by_id = {p.id: p for p in passages}
    groups = dose_groups(passages)
    detection: list[dict[str, Any]] = []
    extraction: list[dict[str, Any]] = []
    per_epoch: dict[int, dict[str, dict[str, float]]] = {}
    errors: list[str] = []
    agentic: list[dict[str, Any]] = []
    agentic_costs: list[dict[str, Any]] = []
    for o in outcomes:
        if o.unit == "extract":
            chosen = {p.id: p for p in extract_selection(passages, cfg.extract_passages)}
            agentic += extract_rows(o, chosen, cfg.extract_methods)
            agentic_costs += method_cost_rows(o)
            errors += [f"epoch {o.epoch} extract: {e}" for e in extract_errors(o, chosen)]
            continue
        scores = prefix_scores(o) if o.unit == "prefix" else detector_scores(o)
        if o.unit == "prefix":
            extraction += extraction_rows(o, by_id)
        per_epoch.setdefault(o.epoch, {}).update(scores)
        for name, values in sorted(scores.items()):
            detection += score_rows(name, o.unit, o.epoch, values, by_id, groups,
                                    cfg.n_bootstrap, cfg.seed)
        errors += [f"epoch {o.epoch} {o.unit}: {e}" for r in o.records
                   for e in r.get("errors", [])]
    overlap = [row for e, sc in sorted(per_epoch.items())
               if "loss" in sc and "pearl_bitflip_sensitivity" in sc
               for row in overlap_rows(e, sc["loss"], sc["pearl_bitflip_sensitivity"], by_id)]
    return {"organism": {"name": cfg.organism, "fingerprint": manifest.get("fingerprint"),
                         "config": manifest.get("config"), "split": manifest.get("split"),
                         "epochs": [{"epoch": e["epoch"], "train_loss": e.get("train_loss")}
                                    for e in manifest.get("epochs", [])]},
            "config": cfg.model_dump(mode="json"),
            "detection": detection, "length_baseline": length_rows(passages,
                                                                   cfg.n_bootstrap, cfg.seed),
            "extraction": extraction, "agentic": agentic, "agentic_costs": agentic_costs,
            "overlap": overlap,
            "costs": [cost_row(o) for o in outcomes], "errors": sorted(set(errors)),
            "plots": plot_data(detection, extraction)}


def plot_data(detection: list[dict[str, Any]],
              extraction: list[dict[str, Any]]) -> dict[str, Any]:
    """Series for the report: AUC by epoch (all members) per method, and the extraction
    share by dose per epoch."""
    auc: dict[str, list[list[float]]] = {}
    for r in detection:
        if r["dose"] == "all":
            auc.setdefault(r["method"], []).append([r["epoch"], r["auc"]])
    by_dose: dict[str, list[list[Any]]] = {}
    for r in extraction:
        by_dose.setdefault(f"epoch{r['epoch']}", []).append(
            [r["group"], r["exact_share"], r["passages40_share"]])
    return {"auc_by_epoch": auc, "extraction_by_dose": by_dose}


def benchmark(cfg: GroundTruthConfig, out: Path, *, progress: Progress | None = None,
              run: bool = True) -> dict[str, Any]:
    """Run the benchmark (:func:`recitation.bench.groundtruth.run_units`) and analyse it;
    the results are also written to ``out/results.json``. ``run=False`` analyses the units
    already saved under ``out`` (a benchmark stopped early) and runs nothing."""
    measured = run_units(cfg, out, progress=progress, run=run)
    if not measured.outcomes:
        raise ConfigError(f"bench groundtruth: no finished unit under {out} for these "
                          "settings; run the benchmark first")
    results = analyse(cfg, measured.manifest, measured.passages, measured.outcomes)
    (out / "results.json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n",
                                      encoding="utf-8")
    return results


def host() -> str:
    """This machine's processor (``/proc/cpuinfo``'s model name, else ``platform``)."""
    import os
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            model = next((ln.split(":", 1)[1].strip() for ln in fh
                          if ln.startswith("model name")), "")
    except OSError:
        model = ""
    return f"{model or platform.processor() or platform.machine()}, {os.cpu_count()} cores"
