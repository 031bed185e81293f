"""`recitation evaluate` against the RECAP release's own Metrics files."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from recitation.corpus.echotrace import RECAP_METHODS, find_extraction_files, parse_extraction_path
from recitation.evaluate import (
    EvaluateConfig,
    compare,
    evaluate_file,
    evaluate_files,
    load_released,
    release_revision,
)
from recitation.evaluate.cli import add_evaluate_parser

ROUGE_TOL = 0.002  # issue 3: ROUGE-L per method within 0.002 of the released value
COUNT_TOL = 0.01  # issue 3: span and passage counts within 1%


def _carol(shared_data: Path, model: str = "gpt-4.1-2025-04-14") -> Path:
    d = shared_data / "echotrace/books/A_Christmas_Carol_-_Charles_Dickens/Extractions"
    return next(d.glob(f"*_extraction_{model}_*.json"))


def test_one_book_reproduces_released_metrics_exactly(shared_data: Path) -> None:
    path = _carol(shared_data)
    f = parse_extraction_path(path)
    released = load_released(f)
    assert released is not None and release_revision(f) == "recap-v1"
    ours = evaluate_file(path, EvaluateConfig(mode="recap-compat"))
    assert ours["rouge_scores"].keys() == released["rouge_scores"].keys()
    for method in RECAP_METHODS:
        assert ours["rouge_scores"][method] == pytest.approx(
            released["rouge_scores"][method], abs=1e-9
        )
        o = ours["contiguous_spans"]["methods"][method]
        r = released["contiguous_spans"]["methods"][method]
        assert o == pytest.approx(r, abs=1e-9)
    assert ours["contiguous_spans"]["parameters"]["min_tokens"] == 40


def test_dedup_mode_never_counts_more(shared_data: Path) -> None:
    path = _carol(shared_data, "deepseek-chat")
    compat = evaluate_file(path, EvaluateConfig(mode="recap-compat", profile="folded"))
    dedup = evaluate_file(path, EvaluateConfig(mode="dedup", sweep=(0, 5)))
    assert dedup["rouge_scores"] == compat["rouge_scores"]  # ROUGE-L does not depend on the mode
    for method in RECAP_METHODS:
        c = compat["contiguous_spans"]["methods"][method]
        d = dedup["contiguous_spans"]["methods"][method]
        assert d["span_count"] <= c["span_count"] and d["passage_count"] <= c["passage_count"]
        assert dedup["mismatch_sweep"]["0"][method]["passage_count"] <= d["passage_count"]
        assert dedup["mismatch_sweep"]["5"][method] == d


def test_cli_writes_metrics_files(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser(prog="recitation")
    add_evaluate_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(
        [
            "evaluate",
            str(_carol(shared_data)),
            "--out",
            str(tmp_path),
            "--mode",
            "recap-compat",
            "--workers",
            "1",
            "--compare",
        ]
    )
    assert args.func(args) == 0
    written = json.loads(next(tmp_path.glob("*_metrics_feedback_*.json")).read_text())
    assert set(written) == {"rouge_scores", "contiguous_spans"}
    assert "largest |ROUGE-L - released|" in capsys.readouterr().out
    bad = parser.parse_args(["evaluate", str(tmp_path / "nothing_here"), "--out", str(tmp_path)])
    assert bad.func(bad) == 2


@pytest.mark.slow
def test_every_book_model_method_matches_release(shared_data: Path) -> None:
    files = find_extraction_files(shared_data / "echotrace")
    assert len(files) == 24
    rows = evaluate_files(files, EvaluateConfig(mode="recap-compat"), workers=2)
    checked = 0
    for f, ours in rows:
        released = load_released(f)
        assert released is not None, f.path
        for d in compare(f, ours, released):
            where = f"{d.book} / {d.model} / {d.method}"
            assert abs(d.rouge_diff) <= ROUGE_TOL, where
            assert abs(d.span_rel) <= COUNT_TOL, where
            assert abs(d.passage_rel) <= COUNT_TOL, where
            o = ours["contiguous_spans"]["methods"][d.method]
            r = released["contiguous_spans"]["methods"][d.method]
            assert o["max_span_length"] == r["max_span_length"], where
            assert o["avg_span_length"] == pytest.approx(r["avg_span_length"], abs=1e-9), where
            checked += 1
    assert checked == 24 * 6


def _synthetic(tmp_path: Path) -> Path:
    words = [f"w{i}" for i in range(100)]
    gold = "First sentence here. " + " ".join(words)
    event = {
        "title": "t",
        "characters": [],
        "detailed_summary": [],
        "segmentation_boundaries": {"first_sentence": "First sentence here.", "last_sentence": ""},
        "text_segment": gold,
        "LLM_completions": {
            "prefix-probing": " ".join(words[:50]),
            "Agent_Extraction": {"simple_agent_extraction": ""},
        },
    }
    empty = dict(event, text_segment="  ")
    data = {
        "book_name": "Synthetic_-_Nobody",
        "chapters": [{"chapter_title": "c", "events": [event, empty]}],
    }
    d = tmp_path / "Synthetic_-_Nobody" / "Extractions"
    d.mkdir(parents=True)
    path = d / "Synthetic_-_Nobody_extraction_m_feedback_fb.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_synthetic_book_scores(tmp_path: Path) -> None:
    path = _synthetic(tmp_path)
    res = evaluate_file(path, EvaluateConfig(mode="recap-compat"))
    assert res["contiguous_spans"]["parameters"]["tokens"] == "recap-v2"  # no released report
    # the given first sentence is removed; recall = 50 of 100 gold tokens
    assert res["rouge_scores"]["prefix-probing"] == pytest.approx(0.5)
    assert res["rouge_scores"]["simple_agent_extraction"] == 0.0  # no candidate: weight kept
    spans = res["contiguous_spans"]["methods"]["prefix-probing"]
    assert (spans["span_count"], spans["passage_count"], spans["max_span_length"]) == (1, 1, 50)
    assert res["contiguous_spans"]["methods"]["simple_agent_extraction"]["span_count"] == 0
