"""The ground-truth benchmark's arithmetic, on hand-made records (no model).

AUCs are checked against scikit-learn, TPR at FPR and the table-4 overlap against values
worked out by hand, the extraction shares against counted records."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from recitation.bench.analysis import (
    analyse,
    detector_scores,
    extraction_rows,
    overlap_rows,
    roc_row,
    score_rows,
)
from recitation.bench.groundtruth import (
    QUICK,
    GroundTruthConfig,
    UnitOutcome,
    unit_key,
    unit_params,
)
from recitation.bench.tables import markdown
from recitation.errors import ConfigError
from recitation.organism.data import Passage


def _p(pid: str, dose: int, text: str = "w " * 10) -> Passage:
    return Passage(id=pid, novel="N", start=0, end=len(text), n_tokens=10, sha256="x",
                   member=dose > 0, dose=dose, text=text)


PASSAGES = [_p("m1", 1), _p("m2", 1), _p("m3", 16), _p("m4", 16),
            _p("n1", 0), _p("n2", 0), _p("n3", 0), _p("n4", 0)]
BY_ID = {p.id: p for p in PASSAGES}


def test_roc_row_matches_sklearn_and_hand_worked_tpr(require: Any) -> None:
    sklearn = require.module("sklearn.metrics", "pip install 'recitation[detect]'")
    labels = [1, 1, 1, 0, 0, 0, 0]
    scores = [0.9, 0.4, 0.7, 0.5, 0.1, 0.2, 0.3]
    row = roc_row(labels, scores, n_boot=50, seed=0)
    assert row["auc"] == pytest.approx(sklearn.roc_auc_score(labels, scores))
    # above every non-member (0.5): 0.9 and 0.7 -> TPR 2/3 at FPR 0
    assert row["tpr_at_1"] == pytest.approx(2 / 3)
    lo, hi = row["auc_ci"]
    assert 0 <= lo <= row["auc"] <= hi <= 1
    assert (row["n_members"], row["n_nonmembers"]) == (3, 4)


def test_score_rows_per_dose_against_all_nonmembers() -> None:
    values = {"m1": 0.2, "m2": 0.9, "m3": 1.0, "m4": 0.95, "n1": 0.1, "n2": 0.3, "n3": 0.5,
              "n4": 0.0}
    rows = {r["dose"]: r for r in score_rows("s", "f", 2, values, BY_ID, ["all", "1", "16"],
                                             0, 0)}
    assert rows["16"]["auc"] == 1.0
    assert rows["1"]["auc"] == pytest.approx((2 + 4) / 8)  # 0.2 beats n1, n4; 0.9 beats all
    assert rows["all"]["n_members"] == 4 and rows["16"]["n_members"] == 2
    assert rows["all"]["auc_ci"] == [None, None]  # no bootstrap asked for


def test_detector_scores_are_oriented_member_high() -> None:
    o = UnitOutcome(0, "whitebox", "k", "completed", [{"scores": [
        {"sample_id": "members:m1", "detector": "loss", "score": 2.0,
         "higher_means_member": False},
        {"sample_id": "nonmembers:n1", "detector": "ratio", "score": 3.0,
         "higher_means_member": True},
        {"sample_id": "nonmembers:n2", "detector": "ratio", "score": float("nan"),
         "higher_means_member": True}]}], {}, 0.0, 0.0, "")
    assert detector_scores(o) == {"loss": {"m1": -2.0}, "ratio": {"n1": 3.0}}


def _prefix_record(pid: str, target: str, continuation: str, lcp: int) -> dict[str, object]:
    return {"item_id": pid, "target": target, "continuation": continuation, "lcp_words": lcp,
            "target_words": len(target.split()), "rouge_l_f1": 0.5}


def test_extraction_rows_count_exact_and_40_token_passages() -> None:
    long = " ".join(f"w{i}" for i in range(60))
    recs = [_prefix_record("m3", long, long + " extra", 60),            # exact, 40+ tokens
            _prefix_record("m4", long, " ".join(long.split()[:45]), 45),  # 40+ but not exact
            _prefix_record("m1", "a b c", "a b c", 3),                  # exact, too short
            _prefix_record("n1", long, "nothing alike", 0)]
    rows = {r["group"]: r for r in extraction_rows(
        UnitOutcome(1, "prefix", "k", "completed", recs, {}, 0, 0, ""), BY_ID)}
    assert (rows["dose16"]["exact"], rows["dose16"]["passages40"]) == (1, 2)
    assert (rows["dose1"]["exact"], rows["dose1"]["passages40"]) == (1, 0)
    assert (rows["nonmember"]["exact"], rows["nonmember"]["passages40"]) == (0, 0)
    lo, hi = rows["dose16"]["exact_ci"]
    assert lo < 0.5 < hi


def test_overlap_is_pearl_v2_table_4() -> None:
    nll = {"m1": math.log(30), "m3": math.log(10), "n1": math.log(100), "n2": math.log(20)}
    loss = {k: -v for k, v in nll.items()}  # member-high, as detector_scores gives it
    sens = {"m1": 0.1, "m3": 0.5, "n1": 0.3, "n2": 0.0}
    rows = {r["group"]: r for r in overlap_rows(3, loss, sens, BY_ID)}
    assert rows["dose16"] | {} == {"epoch": 3, "group": "dose16", "n": 1, "memo_pct": 100,
                                   "mia_pct": 100, "both_pct": 100}
    assert (rows["dose1"]["memo_pct"], rows["dose1"]["mia_pct"]) == (0, 100)
    assert (rows["nonmember"]["memo_pct"], rows["nonmember"]["mia_pct"]) == (50, 50)
    assert rows["nonmember"]["both_pct"] == 0


def test_unit_params_and_keys(tmp_path: Path) -> None:
    files = {n: tmp_path / f"{n}.jsonl" for n in ("members", "nonmembers", "passages")}
    ckpts = {0: tmp_path / "epoch0", 2: tmp_path / "epoch2"}
    job, params = unit_params("whitebox", QUICK, files, 2, ckpts, 64)
    assert job == "detect" and params["reference_model"]["model"] == "organism:quick:epoch0"
    assert "reference_model" not in unit_params("whitebox", QUICK, files, 0, ckpts, 64)[1]
    job, params = unit_params("pearl", QUICK, files, 0, ckpts, 64)
    assert (params["outputs"], params["max_intensity"]) == (1, 3)
    job, params = unit_params("prefix", QUICK, files, 0, ckpts, 64)
    assert job == "prefix_probe" and params["keep_spacing"] and params["max_new_tokens"] == 48
    a = unit_key(job, params, 0, {"epoch": 0})
    assert a == unit_key(job, dict(params), 0, {"epoch": 0})
    assert a != unit_key(job, params, 1, {"epoch": 0})
    assert a != unit_key(job, params, 0, {"epoch": 1})


def test_a_rewritten_sample_file_gives_another_key(tmp_path: Path) -> None:
    """The key holds the content of the files under the benchmark folder, not only their
    names: a subsample of another size (the same file names) is not read from a unit saved
    for the first; the same content under another folder keeps the key."""
    from recitation.bench.groundtruth import _portable

    def key(out: Path, rows: str) -> str:
        (out / "data").mkdir(parents=True, exist_ok=True)
        (out / "data" / "nonmembers_sub.jsonl").write_text(rows, encoding="utf-8")
        params = {"controls": [str(out / "data" / "nonmembers_sub.jsonl")],
                  "signals": str(out / "signals" / "epoch1"), "detectors": ["camia"]}
        return unit_key("detect", _portable(params, out), 0, {"epoch": 1})

    first = key(tmp_path / "a", '{"id": "1", "text": "one"}\n')
    assert key(tmp_path / "b", '{"id": "1", "text": "one"}\n') == first
    assert key(tmp_path / "a", '{"id": "1", "text": "one"}\n{"id": "2", "text": "two"}\n'
               ) != first


def test_config_errors_name_the_field() -> None:
    with pytest.raises(ValueError, match="unknown unit"):
        GroundTruthConfig(units=("whitebox", "nope"))
    import argparse

    from recitation.bench.cli import add_bench_parser, make_bench_config
    parser = argparse.ArgumentParser()
    add_bench_parser(parser.add_subparsers())
    args = parser.parse_args(["bench", "groundtruth", "--quick", "--pearl-outputs", "0"])
    with pytest.raises(ConfigError, match="pearl_outputs"):
        make_bench_config(args)


def test_analyse_and_markdown_end_to_end() -> None:
    recs = [{"scores": [{"sample_id": f"x:{p.id}", "detector": "loss",
                         "score": 1.0 if p.member else 3.0 + i,
                         "higher_means_member": False}]} for i, p in enumerate(PASSAGES)]
    outcome = UnitOutcome(1, "whitebox", "k", "completed", recs,
                          {"calls": 1, "input_tokens": 80, "output_tokens": 0}, 2.5, 3.0, "r")
    manifest = {"fingerprint": "f" * 64, "epochs": [{"epoch": 0}, {"epoch": 1}]}
    res = analyse(GroundTruthConfig(n_bootstrap=20), manifest, PASSAGES, [outcome])
    all_row = next(r for r in res["detection"] if r["dose"] == "all")
    assert all_row["auc"] == 1.0 and all_row["tpr_at_1"] == 1.0
    assert res["plots"]["auc_by_epoch"]["loss"] == [[1, 1.0]]
    assert {r["dose"] for r in res["length_baseline"]} == {"all", "1", "16"}
    md = markdown(res)
    assert "| `loss` | 1 | 1.00 [1.00, 1.00] |" in md
    assert "| whitebox | 1 | 1 | 80 | 0 | 2 | 3 |" in md


def _event(pid: str, dsp: str, refined: list[str], *, passed: bool) -> dict[str, object]:
    agent: dict[str, str] = {"simple_agent_extraction": dsp}
    agent |= {f"simple_agent_extraction_refined_{i}": t for i, t in enumerate(refined)}
    ledger = {"dsp": {"prompts": 1, "input_tokens": 10, "output_tokens": 5},
              "feedback": {"prompts": 2, "input_tokens": 40, "output_tokens": 8},
              "refine": {"prompts": 2, "input_tokens": 30, "output_tokens": 6}}
    return {"item_id": f"chapter-{pid}", "kind": "chapter", "chapter_id": pid,
            "summary_cost": {"summary": {"prompts": 1, "input_tokens": 50, "output_tokens": 20}},
            "gold_events": [], "events": [{
                "event_id": f"{pid}-e0", "chapter_title": pid,
                "llm_completions": {"Agent_Extraction": agent}, "filter": {"passed": passed},
                "cost": ledger, "refusals": {}, "leak": {"summary": None, "hints": []}}]}


def test_extract_rows_per_method_and_filter_savings() -> None:
    from recitation.bench.extraction import extract_errors, extract_rows, method_cost_rows

    long = " ".join(f"w{i}" for i in range(60))
    passages = {"m3": _p("m3", 16, long), "m4": _p("m4", 16, long), "n1": _p("n1", 0, long)}
    half = " ".join(long.split()[:45])
    recs = [
        # DSP gets 45 words (a 40-token passage, not the whole); feedback completes it, but
        # the filter keeps only refined_0 for m4 (below threshold)
        _event("m3", half, [half, long], passed=True),
        _event("m4", half, [half, "Oh w0 w1 " + long + " more"], passed=False),
    ]  # n1: no record (a failed item) -> counts as nothing extracted
    outcome = UnitOutcome(3, "extract", "k", "completed", recs, {}, 0, 0, "")
    rows = {(r["method"], r["group"]): r for r in extract_rows(
        outcome, passages, ("dsp", "recap", "recap_filter"))}
    assert (rows["dsp", "dose16"]["exact"], rows["dsp", "dose16"]["passages40"]) == (0, 2)
    assert rows["recap", "dose16"]["exact"] == 2  # the last refinement, normalized containment
    assert rows["recap_filter", "dose16"]["exact"] == 1  # m4's feedback dropped by the filter
    assert rows["dsp", "dose16"]["mean_rouge_l"] == pytest.approx(45 / 60)
    assert rows["recap", "dose16"]["mean_rouge_l"] == pytest.approx(1.0)
    assert {"n": 1, "exact": 0, "passages40": 0}.items() <= rows["recap", "nonmember"].items()
    assert extract_errors(outcome, passages) == [
        "no extraction for passage n1 (counted as nothing extracted)"]
    cost = {r["method"]: r for r in method_cost_rows(outcome)}
    # summaries (2 x 1) + DSP (2 x 1) for DSP; + feedback and refine (2 x 4) for RECAP;
    # the filter skips m4's feedback and refine (4 calls)
    assert (cost["dsp"]["prompts"], cost["recap"]["prompts"],
            cost["recap_filter"]["prompts"]) == (4, 12, 8)


def test_extract_unit_params_need_a_helper(tmp_path: Path) -> None:
    from recitation.bench.groundtruth import unit_epochs

    files = {"book": tmp_path / "book.json"}
    cfg = QUICK.model_copy(update={"helper": "smollm2"})
    job, params = unit_params("extract", cfg, files, 2, {}, 64)
    assert job == "extract" and params["segment"] and params["helper"]["model"] == "smollm2"
    assert {"min_events": 1, "max_events": 1}.items() <= params["summary"].items()
    assert params["recap"]["max_new_tokens"] == 96 and params["methods"] == [
        "dsp", "recap", "recap_filter"]
    assert unit_epochs("extract", cfg, [0, 1, 2]) == [0, 2]
    assert unit_epochs("extract", cfg.model_copy(update={"extract_epochs": (1,)}),
                       [0, 1, 2]) == [1]
    assert unit_epochs("prefix", cfg, [0, 1, 2]) == [0, 1, 2]
    with pytest.raises(ValueError, match="unknown extract method"):
        GroundTruthConfig(extract_methods=("prefix",))
