"""The typed records (recitation.records): read by hand-made records with known answers, and
as a contract with what the jobs really store (an audit on the scripted model): every stored
record validates, its typed views agree with a derivation from its attempts alone, and the
request kept with a prefix-probing result is the one the call log recorded as sent."""

from __future__ import annotations

import json
from pathlib import Path

from recitation.audit.run import AuditSettings, create_audit, execute_audit
from recitation.records import EventRecord, PrefixProbeRecord
from recitation.runs.audits import load_manifest
from recitation.runs.store import RunStore


def _rec() -> dict[str, object]:
    agent = {"simple_agent_extraction_refined_0": {"text": "opened"},
             "simple_agent_extraction_refined_2": {"text": "better"}}
    return {"event_id": "e1", "llm_completions": {"Agent_Extraction": agent},
            "reported_round": 2, "rounds": 3, "rouge_l": {"round_0": 0.2, "recap": 0.6},
            "attempts": [
                {"stage": "dsp", "text": "refused", "messages": [{"role": "user",
                                                                  "content": "a"}]},
                {"stage": "jailbreak:static", "text": "opened", "messages": [
                    {"role": "user", "content": "b"}]},
                {"stage": "feedback", "round": 1, "hint_sent": "h1"},
                {"stage": "refine", "round": 1, "text": "worse", "rouge_l": 0.1,
                 "kept": False},
                {"stage": "feedback", "round": 2, "hint_sent": None},
                {"stage": "refine", "round": 2, "text": "better", "rouge_l": 0.6,
                 "kept": True, "loop_score": 0.6}],
            "leak": {"hints": [{"before": {"flagged": False}}, {"before": {"flagged": True}}]},
            "cost": {"calls": 7}}


def test_an_event_record_by_hand() -> None:
    r = EventRecord.model_validate(_rec())
    assert (r.first_text, r.final_text) == ("opened", "better")
    assert r.round_curve(4) == [0.2, 0.2, 0.6, 0.6, 0.6]
    opening = r.opening()
    assert opening is not None and opening.stage == "jailbreak:static"
    assert opening.messages == [{"role": "user", "content": "b"}]
    assert r.hints() == ["h1", None] and r.hint_leaked() is True
    assert r.model_extra == {"cost": {"calls": 7}}  # unknown fields kept
    refused = EventRecord.model_validate({"event_id": "e2"})
    assert (refused.first_text, refused.final_text, refused.round_curve(2)) == ("", "",
                                                                             [0.0] * 3)
    assert refused.opening() is None and refused.hint_leaked() is None


def test_what_the_jobs_store_reads_as_typed_records(tmp_path: Path) -> None:
    text = tmp_path / "text.jsonl"
    text.write_text("".join(json.dumps({"id": f"t{i}", "text": f"First sentence {i}. " + " ".join(
        f"t{i}w{j}" for j in range(40))}) + "\n" for i in range(3)), encoding="utf-8")
    s = AuditSettings(passage_words=40, pearl=False, cache=False, n_bootstrap=0,
                      recap_passages=2, recap_rounds=2)
    folder = create_audit([str(text)], ["scripted:echo"], [], s, runs_dir=tmp_path / "runs")
    execute_audit(folder, say=lambda _: None)
    runs = load_manifest(folder)["models"][0]["runs"]
    with RunStore(folder / "runs" / runs["recap_text"]) as store:
        events = [r for _, r in store.results("extract") if r.get("event_id")]
    assert len(events) == 2
    for raw in events:
        r = EventRecord.model_validate(raw)
        # from the attempts alone: the accepted opening, then the last kept refinement
        kept = [a.text for a in r.attempts if a.stage == "refine" and a.kept]
        opening = r.opening()
        assert opening is not None and r.first_text == opening.text
        assert r.final_text == (kept[-1] if kept else r.first_text)
        assert len(r.round_curve(2)) == 3 and r.hints() == [
            a["hint_sent"] for a in raw["attempts"] if a["stage"] == "feedback"]
    with RunStore(folder / "runs" / runs["prefix_probe"]) as store:
        records = [PrefixProbeRecord.model_validate(r) for _, r in store.results(
            "prefix_probe")]
        sent = [json.loads(c["request"]) for c in store.calls()]
    sent_requests = [q for c in sent for q in (c if isinstance(c, list) else
                                               c.get("requests", [c]))]
    assert len(records) == 3
    for r in records:
        assert r.request is not None and r.request in sent_requests
        assert r.prefix in json.dumps(r.request)
