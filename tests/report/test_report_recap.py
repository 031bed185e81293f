"""RECAP in the report: span classes (first / after / lost) against hand-worked offsets, the
feedback-round curve by hand, redaction, and an audit whose RECAP runs reach the report."""

from __future__ import annotations

import json
from pathlib import Path

from recitation.audit.run import AuditSettings, create_audit, execute_audit
from recitation.cli import main
from recitation.report.recap import evidence, gold_marks, round_curve

# King James Bible, Psalm 23 (public domain)
GOLD = ("He maketh me to lie down in green pastures: he leadeth me beside the still waters. "
        "He restoreth my soul: he leadeth me in the paths of righteousness for his name's sake.")
FIRST = "He maketh me to lie down in green pastures, and something else entirely here."
FINAL = ("He restoreth my soul: he leadeth me in the paths of righteousness for his name's "
         "sake.")


def _span(a: int, b: int) -> dict[str, int]:
    return {"gold_start": a, "gold_end": b, "cand_start": 0, "cand_end": b - a, "words": 0}


def test_gold_marks_classes_by_hand() -> None:
    text = "0123456789"
    marks = gold_marks(text, [_span(0, 4), _span(6, 8)], [_span(2, 7)])
    assert marks == [{"text": "01", "cls": "lost"}, {"text": "23", "cls": "first"},
                     {"text": "45", "cls": "after"}, {"text": "6", "cls": "first"},
                     {"text": "7", "cls": "lost"}, {"text": "89", "cls": None}]
    assert "".join(m["text"] for m in marks) == text


def test_round_curve_keeps_the_best_so_far() -> None:
    rec = {"rouge_l": {"round_0": 0.2, "round_1": 0.5, "round_2": 0.4},
           "attempts": [{"stage": "refine", "round": 1, "rouge_l": 0.5, "kept": True},
                        {"stage": "refine", "round": 2, "rouge_l": 0.4, "kept": False}]}
    assert round_curve(rec, 4) == [0.2, 0.5, 0.5, 0.5, 0.5]
    assert round_curve({"rouge_l": {}}, 2) == [0.0, 0.0, 0.0]  # refused throughout


def _record(first: str, final: str) -> dict[str, object]:
    return {"llm_completions": {"Agent_Extraction": {
        "simple_agent_extraction_refined_0": {"text": first},
        "simple_agent_extraction_refined_1": {"text": final}}},
        "reported_round": 1, "rounds": 1, "stop_reason": "max_rounds",
        "rouge_l": {"round_0": 0.3, "recap": 0.6},
        "attempts": [{"stage": "dsp", "text": "I cannot", "messages": [{"role": "user",
                                                                        "content": "go"}]},
                     {"stage": "jailbreak:static", "text": first,
                      "messages": [{"role": "user", "content": "simulate"}]},
                     {"stage": "feedback", "round": 1, "hint_sent": "more on the soul",
                      "leak": {}}],
        "leak": {"hints": [{"round": 1, "before": {"flagged": False}}]}}


def test_evidence_classes_spans_of_both_attempts() -> None:
    payload = {"text": "The LORD is my shepherd; I shall not want. " + GOLD,
               "first_sentence": "The LORD is my shepherd; I shall not want."}
    e = evidence("ev1", payload, _record(FIRST, FINAL), "text", min_tokens=10, redact=False,
                 verbatim_words=10)
    assert e["gold"] == GOLD  # the given first sentence is not scored
    by_cls = {m["cls"]: m["text"] for m in e["gold_marks"] if m["cls"]}
    assert by_cls["lost"].strip() == "He maketh me to lie down in green pastures:"
    assert by_cls["after"].strip() == FINAL
    assert "first" not in by_cls and e["hint_leak"] is False
    assert e["prompt"]["hints"] == ["more on the soul"]
    assert e["prompt"]["stage"] == "jailbreak:static"  # the opening that was accepted
    assert e["prompt"]["opening"] == [{"role": "user", "content": "simulate"}]
    assert e["reproduced"] is True and e["first_attempt_spans"]["reproduced"] is False
    red = evidence("ev1", payload, _record(FIRST, FINAL), "text", min_tokens=10, redact=True)
    assert GOLD not in json.dumps(red) and FINAL not in json.dumps(red)
    assert red["class_words"]["after"] == len(FINAL.split())


def test_an_audit_runs_recap_on_text_and_controls_into_the_report(tmp_path: Path) -> None:
    psalms = [GOLD, "The LORD is my shepherd; I shall not want. " + GOLD,
              "Yea, though I walk through the valley of the shadow of death, I will fear no "
              "evil: for thou art with me; thy rod and thy staff they comfort me."]
    text = tmp_path / "text.jsonl"
    text.write_text("".join(json.dumps({"id": f"t{i}", "text": t}) + "\n"
                            for i, t in enumerate(psalms)), encoding="utf-8")
    ctl = tmp_path / "ctl.jsonl"
    ctl.write_text("".join(json.dumps({"id": f"c{i}", "text": " ".join(
        f"c{i}w{j}" for j in range(30))}) + "\n" for i in range(4)), encoding="utf-8")
    settings = AuditSettings(passage_words=30, pearl=False, cache=False, n_bootstrap=0,
                             recap_passages=2, recap_rounds=2)
    folder = create_audit([str(text)], ["scripted:echo"], [str(ctl)], settings,
                          runs_dir=tmp_path / "runs")
    execute_audit(folder, say=lambda _: None)
    assert main(["report", str(folder)]) == 0
    m = json.loads((folder / "report.json").read_text(encoding="utf-8"))["models"][0]
    groups = m["recap"]["groups"]
    assert set(groups) == {"text", "control"}
    assert groups["text"]["final"]["n"] == 2 and groups["control"]["final"]["n"] == 2
    assert len(groups["text"]["rounds"]) == 3
    assert {e["group"] for e in m["recap"]["evidence"]} == {"text", "control"}
    assert any(c["method"].startswith("recap") for c in m["costs"])
    html = (folder / "report.html").read_text(encoding="utf-8")
    assert 'id="chart-feedback"' in html and 'data-method="recap"' in html
    assert "RECAP on 2 text passages" in (folder / "report.md").read_text(encoding="utf-8")
