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
                      recap_passages=2, recap_rounds=2, null_model="scripted:reference")
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


def test_detect_records_by_hand_one_orientation_for_calibration_and_report() -> None:
    """Scores are oriented once (higher = member-like), for the detect job's calibration and
    the audit report alike: a lower-is-member score negated, a missing or non-finite score
    and a sample that is neither text nor control left out."""
    from recitation.detect.results import build_report
    from recitation.records import DetectRecord, ScoreRecord, oriented_scores
    from recitation.report.numbers import detection
    from recitation.verdict.pins import pins_now

    def rec(sid: str, label: str, *scores: tuple[str, float | None, bool]) -> DetectRecord:
        return DetectRecord(sample={"id": sid, "label": label, "text": f"text of {sid}"},
                            scores=[ScoreRecord(sample_id=sid, detector=d, score=v,
                                                higher_means_member=h) for d, v, h in scores])

    recs = [rec("m1", "member", ("loss", 2.0, False), ("min_k", float("nan"), True),
                ("zlib", None, False)),
            rec("m2", "member", ("loss", 1.0, False), ("min_k", float("inf"), True)),
            rec("c1", "control", ("loss", 3.0, False), ("min_k", -1.5, True)),
            rec("c2", "control", ("loss", 4.0, False), ("min_k", -2.5, True)),
            rec("x", "other", ("loss", 0.1, False))]
    assert oriented_scores(recs) == {
        "loss": {"member": {"m1": -2.0, "m2": -1.0}, "control": {"c1": -3.0, "c2": -4.0},
                 "higher_means_member": False},
        "min_k": {"member": {}, "control": {"c1": -1.5, "c2": -2.5},
                  "higher_means_member": True}}
    raw = [r.model_dump() for r in recs]
    assert [DetectRecord.model_validate(r).model_dump() for r in raw] == raw
    from recitation.detect.job import DetectParams

    report = build_report(raw, DetectParams(labelled=True, n_bootstrap=0))
    det = detection(report, recs, pins_now())["detectors"]
    # both members score above both controls on loss (oriented): AUC 1 in both readings
    assert report["detectors"]["loss"]["labelled"]["auc"] == 1.0
    assert det["loss"]["text_scores"] == [-2.0, -1.0] and det["loss"]["n"] == 2
    assert det["loss"]["control_scores"] == [-3.0, -4.0]
    # the non-finite member scores are in neither the calibration nor the report's plot
    assert report["detectors"]["min_k"]["n_members"] == 0 and det["min_k"]["text_scores"] == []


def test_a_trace_report_reads_through_fields_old_and_new() -> None:
    """The tracing section reads the trace job's report through TraceReport: the metrics the
    job computes (both definitions) validate unchanged, and a report stored without a unit
    (no generation had one) is shown in tokens, its extra keys kept."""
    from recitation.records import TraceReport
    from recitation.report.tracing import markdown
    from recitation.trace.metrics import aggregate

    computed = aggregate([], [], n_span=50, nv_threshold=0.5)
    assert TraceReport.model_validate({"groups": {"all": computed}}).groups[
        "all"].model_dump() == computed
    old = {"groups": {"prefix": {"total_generations": 4, "generations_with_spans": 3,
                                 "average_longest_span_length": 7.25, "full_match_ratio": 0.5,
                                 "avg_nv_recall": 0.125, "max_nv_recall": 0.75,
                                 "unique_total_docs": 2, "total_docs": 9}}}
    assert TraceReport.model_validate(old).groups["prefix"].model_extra == {"total_docs": 9}
    lines = markdown({"organism": old})
    assert "| group | generations with spans | average longest span (tokens) |" in "\n".join(
        lines)
    assert "| prefix | 3 / 4 | 7.25 | 0.5 | 0.125 / 0.75 | 2 |" in lines


def test_a_prefix_probe_record_with_a_misspelt_key_is_refused() -> None:
    """The record the verdict counts is strict: a misspelt key, or a field the job always
    writes missing, is an error naming it (not a record that reads '' or 0)."""
    import pytest
    from pydantic import ValidationError

    good = {"group": "text", "prefix": "p", "target": "t", "continuation": "c",
            "lcp_words": 0, "target_words": 1, "verdict": "no"}
    assert PrefixProbeRecord.model_validate(good).verdict == "no"
    with pytest.raises(ValidationError, match="verdikt"):
        PrefixProbeRecord.model_validate(good | {"verdikt": "verbatim"})
    with pytest.raises(ValidationError, match="continuation"):
        PrefixProbeRecord.model_validate({k: v for k, v in good.items()
                                          if k != "continuation"})
    with pytest.raises(ValidationError, match="verdict"):
        PrefixProbeRecord.model_validate(good | {"verdict": "Verbatim"})


def test_a_detect_record_needs_its_sample() -> None:
    """A detect record without its sample, or a sample without its label or with a misspelt
    key, is refused (before: it read as label '' and was silently in neither group)."""
    import pytest
    from pydantic import ValidationError

    from recitation.records import DetectRecord

    with pytest.raises(ValidationError, match="sample"):
        DetectRecord.model_validate({"scores": []})
    with pytest.raises(ValidationError, match="label"):
        DetectRecord.model_validate({"sample": {"id": "a", "text": "t"}})
    with pytest.raises(ValidationError, match="lable"):
        DetectRecord.model_validate({"sample": {"id": "a", "text": "t", "label": "member",
                                                "lable": "control"}})
    assert DetectRecord.model_validate({"sample": {"id": "a", "text": "t",
                                                   "label": "member"}}).label == "member"
