"""A detect run's results: stored detect records turned into calibrated verdicts and
metrics (the run's report); a run's calls estimated.

``build_report`` is pure (records in, JSON-serializable report out). The detect job's
``finalize`` returns it and the runner stores it at the end of every execute, first run and
every resume (meta key ``detect_report``; the shift guard's warnings, under ``warnings``,
also as run events), so scores (per item, in ``results``) and verdicts (in ``meta``) both
live in the run store, and a resumed run's report covers every sample. ``finalize_run``
rebuilds it the same way for a stored run.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from recitation.corpus.tokenize import estimate_tokens
from recitation.detect.blind import blind_baseline
from recitation.detect.calibrate import (
    CalibrationMethod,
    calibrate,
    fpr_curve,
    labelled_metrics,
    length_baseline_auc,
    shift_guard,
    verdicts,
)
from recitation.errors import ConfigError
from recitation.records import DetectRecord, oriented_scores
from recitation.runs.jobs import Table
from recitation.verdict.types import Blind

if TYPE_CHECKING:
    from recitation.detect.pearl import RequestPool
    from recitation.detect.samples import Sample
    from recitation.runs.config import RunConfig


class DetectParams(Protocol):
    """What the report reads of a detect job's parameters (``detect.job.DetectParams``).

    A protocol, so that this module does not import the job: ``job`` -> ``results``, one way.
    """

    @property
    def target_fpr(self) -> float: ...
    @property
    def calibration(self) -> CalibrationMethod: ...
    @property
    def labelled(self) -> bool: ...
    @property
    def n_bootstrap(self) -> int: ...
    @property
    def detectors(self) -> Sequence[str]: ...
    @property
    def reference_model(self) -> object: ...


class DetectJob(Protocol):
    """What :func:`estimate_calls` reads of a detect job (``detect.job.DetectJob``)."""

    @property
    def params(self) -> DetectParams: ...
    def samples(self) -> list[Sample]: ...
    def plan(self, samples: list[Sample], model: None, /) -> tuple[RequestPool, Any, Any]: ...
    def plugins(self) -> list[Any]: ...
    @property
    def seed(self) -> int: ...

log = logging.getLogger(__name__)


def _detector_report(name: str, d: dict[str, Any], texts: dict[str, str],
                     params: DetectParams, seed: int) -> dict[str, Any]:
    members, controls = d["member"], d["control"]
    rep: dict[str, Any] = {"detector": name, "higher_means_member": d["higher_means_member"],
                           "n_members": len(members), "n_controls": len(controls)}
    if not controls:
        rep["error"] = "no control scores: cannot calibrate"
        return rep
    cal = calibrate(list(controls.values()), params.target_fpr, calibration_method(params))
    rep["calibration"] = cal.to_dict()
    rep["fpr_curve"] = fpr_curve(list(controls.values()))
    rep["verdicts"] = verdicts(members, cal)
    rep["flagged"] = sum(v["member"] for v in rep["verdicts"])
    if params.labelled and members and len(controls) >= 2:
        rep["labelled"] = labelled_metrics(list(members.values()), list(controls.values()),
                                           n_boot=params.n_bootstrap, seed=seed)
        rep["length_baseline_auc"] = length_baseline_auc(
            [texts[s] for s in members], [texts[s] for s in controls])
    return rep


def calibration_method(params: DetectParams) -> CalibrationMethod:
    """The threshold rule (``--calibration``; conformal by default)."""
    return params.calibration


def build_report(records: list[dict[str, Any]], params: DetectParams,
                 seed: int = 0) -> dict[str, Any]:
    typed = [DetectRecord.model_validate(r) for r in records]
    texts = {r.sample_id: r.text for r in typed}
    member_texts = [r.text for r in typed if r.label == "member"]
    control_texts = [r.text for r in typed if r.label == "control"]
    report: dict[str, Any] = {"target_fpr": params.target_fpr, "n_members": len(member_texts),
                              "n_controls": len(control_texts),
                              "calibration_method": calibration_method(params),
                              "detectors": {}}
    if member_texts and len(control_texts) >= 2:
        report["shift"] = shift_guard(member_texts, control_texts, seed=seed)
        report["blind"] = blind_baseline(member_texts, control_texts, seed=seed)
    report["warnings"] = list(report.get("shift", {}).get("warnings", []))
    if (blind := report.get("blind")) and blind["separates"]:
        report["warnings"].append(Blind.model_validate(blind).describe())
    for name, d in sorted(oriented_scores(typed).items()):
        report["detectors"][name] = _detector_report(name, d, texts, params, seed)
    report["errors"] = {r.sample_id: r.errors for r in typed if r.errors}
    from recitation.detect.pearl import pearl_report_notes  # PEARL definitions, warnings

    if notes := pearl_report_notes(records):
        report["pearl"] = notes
    return report


def _fmt_ci(x: Any) -> str:
    if not x or x[0] is None:
        return ""
    return f"[{x[0]:.2f}, {x[1]:.2f}]"


def _fmt_tpr(lab: dict[str, Any], pct: int, ci: bool) -> str:
    """TPR at the conformal threshold ("n/a" when that FPR is not reachable)."""
    if not lab:
        return "-"
    tpr = lab.get(f"tpr_at_{pct}pct_fpr")
    if tpr is None:
        return "n/a"
    return f"{tpr:.2f} {_fmt_ci(lab.get(f'tpr_at_{pct}pct_fpr_ci'))}" if ci else f"{tpr:.2f}"


def _fmt_cal(cal: dict[str, Any]) -> str:
    if not cal.get("reachable"):
        return "n/a"
    return f"<={cal['fpr_bound']:.3f} {_fmt_ci(cal.get('fpr_ci'))}"


def _calibration_lines(report: dict[str, Any]) -> list[str]:
    """What the verdicts' FPR means, and every 'not reachable' note, said once."""
    n, target = report["n_controls"], report["target_fpr"]
    method = report.get("calibration_method", "conformal")
    if method == "empirical":
        lines = [f"verdicts at target FPR {target * 100:g}% with the EMPIRICAL threshold "
                 "(in-sample on the controls; the out-of-sample bound in the last column "
                 "exceeds the target)"]
    else:
        lines = [f"verdicts at target FPR {target * 100:g}%: conformal threshold over {n} "
                 "controls; 'FPR bound' holds for a new non-member (out of sample), [CP 95%] "
                 "is the Clopper-Pearson interval of this threshold's FPR"]
    cals = [r.get("calibration", {}) for r in report["detectors"].values()]
    notes = sorted({c["note"] for c in cals if c.get("note")})
    lines += [f"NOTE: {m}" for m in notes]
    labs = [r.get("labelled", {}) for r in report["detectors"].values()]
    lab_notes = sorted({x[k] for x in labs for k in ("tpr_at_1pct_fpr_note",
                                                      "tpr_at_5pct_fpr_note") if x.get(k)})
    bounds = sorted({f"{p}% -> FPR <= {x[f'fpr_bound_{p}pct']:.3f}" for x in labs
                     for p in (1, 5) if x.get(f"fpr_bound_{p}pct") is not None})
    if labs and any(labs):
        lines.append("TPR@X%FPR: share of audited samples above the conformal X% threshold "
                     f"({', '.join(bounds) or 'none reachable'} out of sample); the ROC-curve "
                     "values on these same controls are in the report as *_in_sample")
    lines += [f"TPR@1%/5%FPR n/a: {m.replace('; no sample is flagged', '')}"
              for m in lab_notes]
    return lines


def report_table(report: dict[str, Any]) -> Table:
    rows = []
    for name, r in report["detectors"].items():
        lab = r.get("labelled", {})
        cal = r.get("calibration", {})
        rows.append([
            name, "higher" if r["higher_means_member"] else "lower",
            f"{lab['auc']:.3f} {_fmt_ci(lab.get('auc_ci'))}" if lab else "-",
            _fmt_tpr(lab, 1, ci=False), _fmt_tpr(lab, 5, ci=True),
            f"{r['length_baseline_auc']:.2f}" if "length_baseline_auc" in r else "-",
            f"{r.get('flagged', 0)}/{r['n_members']}",
            _fmt_cal(cal) if cal else r.get("error", "-"),
        ])
    head = [f"{report['n_members']} audited samples, {report['n_controls']} controls",
            *_calibration_lines(report)]
    shift = report.get("shift", {})
    if shift:
        fa, fp = shift["feature_auc"], shift.get("feature_p", {})
        head.append("blind baselines (AUC, permutation p): " + ", ".join(
            f"{k} {v:.2f}" + (f" (p = {fp[k]:.3f})" if fp.get(k) is not None else "")
            for k, v in fa.items() if v is not None))
        head += [f"WARNING: {w}" for w in shift["warnings"]]
    if blind := report.get("blind"):
        line = Blind.model_validate(blind).describe()
        head.append(f"WARNING: {line}" if blind["separates"] else line)
    inverted = [n for n, r in report["detectors"].items()
                if (r.get("labelled", {}).get("auc_ci") or [None, None])[1] is not None
                and r["labelled"]["auc_ci"][1] < 0.5]
    if inverted:
        head.append("inverted (AUC interval below 0.5: the detector's assumption fails on these "
                    f"data, e.g. a reference model that memorized more): {', '.join(inverted)}")
    if report.get("errors"):
        head.append(f"{len(report['errors'])} sample(s) with detector errors (see the report)")
    return Table("Membership detection", ["detector", "member if", "ROC AUC [95% CI]",
                                          "TPR@1%FPR", "TPR@5%FPR [CI]", "length AUC",
                                          "flagged", "FPR bound [CP 95%]"], rows, head)


def finalize_run(run_dir: Path) -> dict[str, Any]:
    """Rebuild and store the report of a stored detect run, the way every execute ends
    (:func:`recitation.runs.runner.finalize_run`: the job's ``finalize``)."""
    from recitation.runs.runner import finalize_run as finalize_stored

    report = finalize_stored(run_dir)
    if report is None:
        raise ConfigError(f"{run_dir}: not a detect run (its job makes no report)")
    return report


def count_calls(job: DetectJob, *, logprobs: bool = True) -> dict[str, int]:
    """Model calls and tokens a run of ``job`` will need (before any call is made)."""
    samples = job.samples()
    p = job.params
    out = {"samples": len(samples), "generate_calls": 0, "score_calls": 0,
           "reference_score_calls": 0, "input_tokens": 0, "output_tokens": 0}
    if "pearl" in p.detectors:
        pool, _, _ = job.plan(samples, None)
        out["generate_calls"] = len(pool.requests)
        for r in pool.requests:
            out["input_tokens"] += estimate_tokens(r.text)
            out["output_tokens"] += r.max_tokens
    from recitation.methods import estimate, family_methods  # calls from the metadata

    makers = [x for x in job.plugins() if hasattr(x, "requests")]  # SaMIA: generations
    for plugin in makers:
        for s in samples:
            for r in plugin.requests(job, s):
                out["generate_calls"] += 1
                out["input_tokens"] += estimate_tokens(r.text)
                out["output_tokens"] += r.max_tokens
    scoring = estimate([m for f in p.detectors for m in family_methods("detector", f)], p)
    if (per := len(scoring.score)) and logprobs:  # texts scored per sample
        out["score_calls"] = per * len(samples)  # recall: its prefix's tokens not counted
        out["input_tokens"] += per * sum(estimate_tokens(s.text) for s in samples)
        out["reference_score_calls"] = scoring.reference * len(samples)
    out["model_calls"] = (out["generate_calls"] + out["score_calls"]
                          + out["reference_score_calls"])
    return out


def estimate_calls(job: DetectJob, cfg: RunConfig, *, logprobs: bool = True) -> dict[str, Any]:
    """:func:`count_calls` with the cost of the calls under the run's price table."""
    out: dict[str, Any] = dict(count_calls(job, logprobs=logprobs))
    table = cfg.price_table()
    out["estimated_cost_usd"] = table.cost(cfg.model.model, out["input_tokens"],
                                           out["output_tokens"])
    out["priced"] = table.lookup(cfg.model.model) is not None
    return out
