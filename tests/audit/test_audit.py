"""``recitation audit``: methods chosen by access, inputs, controls, resume, report from the
store alone (control flow on the scripted model; the real-model audit is in
tests/report/test_report_browser.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recitation import methods
from recitation.audit.inputs import builtin_controls, load_passages, pick
from recitation.audit.run import (
    AuditSettings,
    create_audit,
    execute_audit,
    plan_methods,
    run_stages,
)
from recitation.cli import main
from recitation.errors import ConfigError, CorpusError
from recitation.models.registry import capabilities_of
from recitation.runs.audits import load_manifest
from recitation.runs.store import RunStore


def test_methods_follow_the_models_access() -> None:
    """The families come from the registry's audit declarations (recitation.methods.AuditUse):
    each runs when the model's access, the settings and the controls allow it, else it is
    left out with the reason."""
    s = AuditSettings()
    chosen, skipped = plan_methods("scripted:x", s, 12)
    have = methods.model_access(capabilities_of("scripted"))
    have |= {methods.Access.HELPER_MODEL, methods.Access.JUDGE_MODEL}  # itself, it generates
    fits = [f.family for f in methods.audit_families()  # whatever is registered
            if any(not methods.missing_access(m, have) for m in f.methods)
            and f.use.min_controls <= 12 and (not f.use.off or getattr(s, f.use.off))]
    assert chosen == fits and set(chosen) | set(skipped) >= {
        f.family for f in methods.audit_families()}
    assert {"prefix_probe", "recap", "pearl", "whitebox", "recall"} <= set(chosen)
    assert "corpus_index" in skipped["simpletrace"] and "tokenizer" in skipped["dcpdd"]
    assert skipped["continue"] == "turned off (--whole-book)"  # off unless asked for
    chosen, skipped = plan_methods("anthropic:claude-3-7-sonnet-latest",
                                   s.model_copy(update={"corpus": ["idx"]}), 12)
    assert "whitebox" not in chosen and "logprobs" in skipped["whitebox"]
    assert "recall" not in chosen and "dcpdd" not in chosen
    assert {"prefix_probe", "pearl", "simpletrace"} <= set(chosen)
    chosen, skipped = plan_methods("local:smollm2", s, 12)  # logprobs, distribution, tokenizer
    assert {"whitebox", "recall", "dcpdd"} <= set(chosen)
    chosen, skipped = plan_methods(
        "scripted:x", s.model_copy(update={"pearl": False, "recap_passages": 0}), 3)
    assert "pearl" not in chosen and "no-pearl" in skipped["pearl"]
    assert "recap" not in chosen and "recap-passages 0" in skipped["recap"]
    # ReCaLL's prefix takes 3 controls: with 3 there is none left to calibrate it
    assert "recall" not in chosen and "at least 4 controls" in skipped["recall"]


def test_inputs_books_folders_jsonl(tmp_path: Path) -> None:
    words = " ".join(f"w{i}" for i in range(250))
    (tmp_path / "a.txt").write_text(words, encoding="utf-8")
    assert [len(p.text.split()) for p in load_passages(str(tmp_path / "a.txt"), 100)] == \
        [100, 100]
    folder = tmp_path / "books"
    folder.mkdir()
    (folder / "x.txt").write_text(words, encoding="utf-8")
    (folder / "y.txt").write_text(words, encoding="utf-8")
    ps = load_passages(str(folder), 100)
    assert [p.id for p in ps] == ["x:00000", "x:00001", "y:00000", "y:00001"]
    (tmp_path / "p.jsonl").write_text(json.dumps({"id": 7, "text": words}) + "\n", "utf-8")
    (only,) = load_passages(str(tmp_path / "p.jsonl"), 50)
    assert only.id == "p:7" and len(only.text.split()) == 50
    (tmp_path / "bad.jsonl").write_text(json.dumps({"txt": "x"}) + "\n", "utf-8")
    with pytest.raises(CorpusError, match="'text'"):
        load_passages(str(tmp_path / "bad.jsonl"), 50)
    with pytest.raises(ConfigError, match="no such file"):
        load_passages(str(tmp_path / "missing.txt"), 50)
    assert [p.id for p in pick(ps, 2)] == ["x:00000", "y:00000"]


def test_builtin_controls_fit_kjv_only() -> None:
    kjv = builtin_controls(["kjv:famous-long"], 100)
    assert kjv.passages and "2026" in kjv.reason
    other = builtin_controls(["my_book.txt"], 100)
    assert other.passages == [] and "detectors are not run" in other.reason
    assert "--null-model" in other.reason  # reproduction is still judged, against the null


def _text(tmp_path: Path, n: int = 3) -> Path:
    p = tmp_path / "text.jsonl"
    p.write_text("".join(json.dumps({"id": f"t{i}", "text": " ".join(
        f"t{i}w{j}" for j in range(30))}) + "\n" for i in range(n)), encoding="utf-8")
    return p


def test_no_controls_no_verdict_and_report_from_the_store(tmp_path: Path) -> None:
    """No controls and no reference model for the reproduction null: no verdict."""
    settings = AuditSettings(passage_words=30, pearl=False, cache=False, null_model=None)
    folder = create_audit([str(_text(tmp_path))], ["scripted:echo"], [], settings,
                          runs_dir=tmp_path / "runs")
    manifest = load_manifest(folder)
    assert manifest["controls"]["n"] == 0 and "detect" in manifest["models"][0]["skipped"]
    # prefix probing and RECAP on the text; no controls, so no RECAP on controls
    assert [o.status for o in execute_audit(folder, say=lambda _: None)] == ["completed"] * 2
    assert set(manifest["models"][0]["runs"]) == {"prefix_probe", "recap_text"}
    (tmp_path / "text.jsonl").unlink()  # the report never reads the user's files
    assert main(["report", str(folder)]) == 0
    f = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    assert f["models"][0]["verdict"]["label"] == "no verdict"
    assert "no --controls" in (folder / "report.md").read_text(encoding="utf-8")


def test_a_local_model_runs_its_two_recap_runs_together() -> None:
    """A model that batches here runs RECAP on the passages and on the controls in one stage
    (their prompts decoded in one batch: tests/models/test_rendezvous.py); an API model one
    run after the other, within its rate limits."""
    runs = {m: f"run-{m}" for m in ("prefix_probe", "recap_text", "recap_control", "detect")}
    assert run_stages({"spec": "local:smollm2", "runs": runs}) == [
        ["prefix_probe"], ["recap_text", "recap_control"], ["detect"]]
    assert run_stages({"spec": "openai:gpt-4o-mini", "runs": runs}) == [
        ["prefix_probe"], ["recap_text"], ["recap_control"], ["detect"]]
    del runs["recap_control"]
    assert run_stages({"spec": "local:smollm2", "runs": runs}) == [
        ["prefix_probe"], ["recap_text"], ["detect"]]


def test_a_second_execute_repeats_no_call(tmp_path: Path) -> None:
    ctl = tmp_path / "ctl.jsonl"
    ctl.write_text("".join(json.dumps({"id": f"c{i}", "text": " ".join(
        f"c{i}w{j}" for j in range(30))}) + "\n" for i in range(9)), encoding="utf-8")
    settings = AuditSettings(passage_words=30, pearl=False, cache=False, n_bootstrap=0)
    folder = create_audit([str(_text(tmp_path))], ["scripted:echo"], [str(ctl)], settings,
                          runs_dir=tmp_path / "runs")
    execute_audit(folder, say=lambda _: None)
    runs = sorted((folder / "runs").iterdir())
    assert len(runs) == 4  # prefix probing, RECAP on text and on controls, detect
    before = {r.name: RunStore(r).call_totals()["calls"] for r in runs}
    outcomes = execute_audit(folder, say=lambda _: None)
    assert all(o.stats.backend_calls == 0 for o in outcomes)
    assert {r.name: RunStore(r).call_totals()["calls"] for r in runs} == before


def test_compare_two_audits(tmp_path: Path) -> None:
    settings = AuditSettings(passage_words=30, pearl=False, cache=False, null_model=None)
    folders = [create_audit([str(_text(tmp_path, n))], ["scripted:echo"], [], settings,
                            runs_dir=tmp_path / "runs") for n in (2, 3)]
    for f in folders:
        execute_audit(f, say=lambda _: None)
    out = tmp_path / "cmp"
    assert main(["compare", *map(str, folders), "--out", str(out)]) == 0
    table = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert [r[0] for r in table["rows"]] == [f.name for f in folders]
    text, recap = (table["columns"].index(c) for c in ("text reproduced",
                                                         "RECAP text reproduced"))
    assert [r[text] for r in table["rows"]] == ["0/2", "0/3"]
    assert [r[recap].split("/")[1] for r in table["rows"]] == ["2", "3"]  # RECAP on each
    assert "chart-compare" in (out / "compare.html").read_text(encoding="utf-8")


def test_a_corpus_index_adds_tracing(tmp_path: Path) -> None:
    """--corpus: SimpleTrace of the continuations; the echoing model's replies (the text's
    own prefixes) are found in an index of the text, the controls' are not."""
    text = _text(tmp_path)
    assert main(["index", "build", str(text), str(tmp_path / "index")]) == 0
    ctl = tmp_path / "ctl.jsonl"
    ctl.write_text("".join(json.dumps({"id": f"c{i}", "text": " ".join(
        f"c{i}w{j}" for j in range(30))}) + "\n" for i in range(9)), encoding="utf-8")
    settings = AuditSettings(passage_words=30, pearl=False, cache=False, n_bootstrap=0,
                             corpus=[str(tmp_path / "index")])
    folder = create_audit([str(text)], ["scripted:echo"], [str(ctl)], settings,
                          runs_dir=tmp_path / "runs")
    assert "simpletrace" in load_manifest(folder)["models"][0]["methods"]
    execute_audit(folder, say=lambda _: None)
    assert main(["report", str(folder)]) == 0
    f = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    groups = f["sections"]["tracing"]["scripted:echo"]["groups"]  # report/tracing.py
    assert groups["text"]["generations_with_spans"] == 3
    assert groups["control"]["generations_with_spans"] == 0
    html = (folder / "report.html").read_text(encoding="utf-8")
    assert '<section id="tracing"><h2>Tracing into the corpus</h2>' in html
    assert "| text | 3 / " in (folder / "report.md").read_text(encoding="utf-8")
