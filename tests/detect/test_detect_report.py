"""The detect report states the out-of-sample FPR bound, its Clopper-Pearson interval and
the 'not reachable' note with every verdict, in the stored report and in the CLI table."""

from __future__ import annotations

import json

import numpy as np
import pytest

from recitation.detect.job import DetectParams
from recitation.detect.results import build_report, report_table

pytest.importorskip("scipy")


def _records(n_members: int, n_controls: int, seed: int = 0) -> list[dict[str, object]]:
    rng = np.random.default_rng(seed)
    recs: list[dict[str, object]] = []
    for label, n, mu in (("member", n_members, 2.0), ("control", n_controls, 0.0)):
        for i in range(n):
            sid = f"{label}:{i}"
            loss = float(rng.normal(mu, 1.0))
            recs.append({"sample": {"id": sid, "label": label, "text": f"word {i} " * 30},
                         "scores": [{"sample_id": sid, "detector": "loss", "score": -loss,
                                     "higher_means_member": False},
                                    {"sample_id": sid, "detector": "zlib", "score": loss,
                                     "higher_means_member": True}]})
    return recs


def _params(**kw: object) -> DetectParams:
    return DetectParams(**{"n_bootstrap": 20, **kw})  # type: ignore[arg-type]


def test_verdicts_state_the_conformal_bound_and_interval() -> None:
    report = build_report(_records(20, 20), _params())
    assert report["calibration_method"] == "conformal"
    rep = report["detectors"]["zlib"]
    cal = rep["calibration"]
    assert cal["method"] == "conformal" and cal["reachable"] and cal["rank"] == 20
    assert cal["fpr_bound"] == pytest.approx(1 / 21)
    lo, hi = cal["fpr_ci"]
    assert lo == 0.0 and 0.1 < hi < 0.2  # Clopper-Pearson for 0 of 20
    assert all(v["fpr"] == pytest.approx(1 / 21) and v["fpr_ci"] == [lo, hi]
               for v in rep["verdicts"])
    assert rep["labelled"]["fpr_bound_5pct"] == pytest.approx(1 / 21)
    json.dumps(report, allow_nan=False)  # storable as meta detect_report: no inf threshold
    table = report_table(report)
    text = "\n".join(table.headline) + str(table.rows)
    assert "FPR bound [CP 95%]" in table.columns
    assert "<=0.048 [0.00, 0.17]" in text
    assert "a 1% FPR is not reachable with 20 controls (needs at least 99)" in text
    assert [row[3] for row in table.rows] == ["n/a", "n/a"]  # the TPR@1%FPR column
    assert "5% -> FPR <= 0.048 out of sample" in text


def test_too_few_controls_flag_nothing_and_say_so() -> None:
    report = build_report(_records(10, 12), _params(target_fpr=0.05))
    for rep in report["detectors"].values():
        cal = rep["calibration"]
        assert not cal["reachable"] and cal["threshold_oriented"] is None
        assert rep["flagged"] == 0 and not any(v["member"] for v in rep["verdicts"])
        assert cal["note"] == ("a 5% FPR is not reachable with 12 controls (needs at least "
                               "19); no sample is flagged")
        assert all(v["note"] == cal["note"] for v in rep["verdicts"])
    json.dumps(report, allow_nan=False)
    table = report_table(report)
    assert any("NOTE: a 5% FPR is not reachable with 12 controls" in h for h in table.headline)
    assert all(row[-1] == "n/a" for row in table.rows)


def test_empirical_calibration_is_a_named_option_with_its_honest_bound() -> None:
    report = build_report(_records(20, 20), _params(calibration="empirical"))
    cal = report["detectors"]["loss"]["calibration"]
    assert cal["method"] == "empirical" and cal["achieved_fpr_in_sample"] == 0.05
    assert cal["fpr_bound"] == pytest.approx(2 / 21)  # what it really gives out of sample
    assert any("EMPIRICAL" in h for h in report_table(report).headline)


def test_cli_exposes_the_calibration_option() -> None:
    import argparse

    from recitation.detect.cli import _params as cli_params
    from recitation.detect.cli import add_detect_parser

    parser = argparse.ArgumentParser()
    add_detect_parser(parser.add_subparsers())
    args = parser.parse_args(["detect"])
    assert cli_params(args)["calibration"] == "conformal"
    args = parser.parse_args(["detect", "--calibration", "empirical"])
    assert DetectParams(**cli_params(args)).calibration == "empirical"
