"""Reproduction judged without controls: the verbatim span's probability under a reference
model that cannot have memorized the text (extract/null.py), and the verdict it gives."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from recitation.extract.null import reproduced_span, span_logprob
from recitation.metrics.null import beyond_chance
from recitation.models.base import TokenScores
from recitation.report.numbers import null_summary
from recitation.report.verdict_inputs import verdict_inputs
from recitation.verdict import decide


def verdict(model: dict[str, object], controls: dict[str, object]) -> dict[str, object]:
    """The verdict of one model's findings, as the report decides it."""
    return decide(verdict_inputs(model, {"controls": controls})).as_dict()


def test_the_span_is_the_targets_text_up_to_its_lcp_words() -> None:
    target = "Emma Woodhouse, handsome, clever, and rich\u2019s heir; with a comfortable home"
    assert reproduced_span(target, 1) == "Emma"
    assert reproduced_span(target, 3) == "Emma Woodhouse, handsome"
    assert reproduced_span(target, 6) == "Emma Woodhouse, handsome, clever, and rich\u2019s"
    assert reproduced_span(target, 99) == target  # all of a shorter target
    assert reproduced_span(target, 0) == ""


def test_the_span_log_probability_is_read_after_the_prefix() -> None:
    """The span's tokens (scored alone) end the conditioned tokens: their log-probabilities
    there are summed; a first token merged with the prefix is left out."""
    plain = TokenScores(tokens=("\u0120was", "\u0120rich"), logprobs=(-9.0,))
    cond = TokenScores(tokens=("She", "\u0120was", "\u0120rich"), logprobs=(-1.5, -2.25))
    assert span_logprob(plain, cond) == (-3.75, 2)
    merged = TokenScores(tokens=("She", "\u0120wasrich"), logprobs=(-4.0,))
    with pytest.raises(ValueError, match="tokenize differently"):
        span_logprob(plain, merged)


def test_the_threshold_is_alpha_over_the_passages() -> None:
    assert beyond_chance(math.log(0.05 / 20), 20, 0.05)  # exactly at the bound
    assert not beyond_chance(math.log(0.05 / 20) + 1e-9, 20, 0.05)
    assert not beyond_chance(None, 20, 0.05) and not beyond_chance(-50.0, 0, 0.05)


def _evidence(sid: str, log10_p: float | None) -> dict[str, object]:
    null = None if log10_p is None else {"model": "ref", "span_words": 20, "tokens": 25,
                                         "logprob": log10_p * math.log(10), "log10_p": log10_p}
    return {"id": sid, "null": null}


def test_a_verdict_without_controls_rests_on_the_null() -> None:
    """Two spans, one improbable under the reference (10^-30), one predictable (10^-1):
    with 10 passages at alpha 0.05 the bound is 10^-2.3; only the first counts."""
    ev = [_evidence("a", -30.0), _evidence("b", -1.0)] + [_evidence(f"x{i}", None)
                                                          for i in range(8)]
    null = null_summary(ev, 0.05)
    assert null["n"] == 10 and null["beyond_chance"] == 1
    assert null["threshold_log10"] == pytest.approx(math.log10(0.005))
    v = verdict({"extraction": {"text": {"n": 10, "reproduced": 2, "passages": 0,
                                         "longest_span": 25, "null": null}}},
                {"n": 0, "reason": "no controls"})
    assert v["label"].startswith("memorized") and v["rule"] == "null_reproduction"
    text = " ".join(v["reasons"])
    assert "1 of 10 text passages reproduced verbatim beyond chance (a: 20 words" in text
    assert "quoted widely elsewhere" in text and "alpha / N = 0.05 / 10" in text
    quiet = null_summary([_evidence("b", -1.0)] + [_evidence(f"x{i}", None) for i in range(9)],
                         0.05)
    v = verdict({"extraction": {"text": {"n": 10, "reproduced": 1, "passages": 0,
                                         "longest_span": 9, "null": quiet}}},
                {"n": 0, "reason": "no controls"})
    assert v["label"].startswith("no reproduction beyond chance") and v["level"] == "low"
    v = verdict({"extraction": {"text": {"n": 10, "reproduced": 0, "passages": 0,
                                         "longest_span": 0}}}, {"n": 0})
    assert v["label"] == "no verdict"  # no reference model: no null


def test_the_null_is_not_the_audited_model_itself() -> None:
    from recitation.audit.run import AuditSettings, null_model_for

    s = AuditSettings()
    assert null_model_for("organism:quick:epoch2", s, has_controls=False) == "smollm2"
    assert null_model_for("smollm2", s, has_controls=False) is None
    assert null_model_for("organism:quick:epoch2", s, has_controls=True) is None
    assert AuditSettings(null_model="none").null_model is None


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.xdist_group("organism")
def test_the_organism_without_controls_is_memorized_by_the_null_and_held_out_text_is_not(
        tmp_path: Path, shared_data: Path, quick: object) -> None:
    """The quick organism audited with no controls: its training passages are reproduced
    verbatim and improbable under its base model (the null), so the verdict is memorized;
    the same command on its held-out passages of the same novels gives no such verdict."""
    from conftest import run_recitation

    def audit(text: str) -> dict[str, object]:
        run_recitation(shared_data, "audit", "--text", text, "--model", "organism:quick:epoch2",
                       "--passages", "0", "--passage-words", "64", "--max-new-tokens", "40",
                       "--recap-passages", "0", "--no-pearl", "--runs-dir",
                       str(tmp_path / text.rsplit(":", 1)[1]))
        (folder,) = (tmp_path / text.rsplit(":", 1)[1]).iterdir()
        report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
        (model,) = report["models"]
        return dict(model)

    members = audit("organism:quick:members")
    v, null = members["verdict"], members["extraction"]["text"]["null"]
    assert v["label"].startswith("memorized") and v["rule"] == "null_reproduction", v
    assert null["model"] and null["n"] == 15 and null["beyond_chance"] >= 3, null
    # one rule: every passage reproduced beyond chance is counted as reproduced verbatim
    assert members["extraction"]["text"]["reproduced"] >= null["beyond_chance"]
    held = audit("organism:quick:held-out")
    assert not held["verdict"]["label"].startswith("memorized"), held["verdict"]
    assert held["extraction"]["text"]["null"]["beyond_chance"] == 0


def test_an_audit_without_controls_runs_the_null_and_reports_it(tmp_path: Path) -> None:
    """End to end on scripted models: the audited model echoes the prefix, which here is
    the continuation too (each passage is a 10-word run said twice), so every passage is
    reproduced verbatim; the reference model's pseudo log-probabilities (each word
    -log(1 + its length)) put every span far below alpha / N; the report says memorized,
    with the rule, and the reference model's calls sit in the prefix run's store."""
    from recitation.audit.run import AuditSettings, create_audit, execute_audit
    from recitation.cli import main
    from recitation.runs.audits import load_manifest
    from recitation.runs.store import RunStore

    text = tmp_path / "t.jsonl"
    half = [" ".join(f"w{i}x{j}" for j in range(10)) for i in range(3)]
    text.write_text("".join(json.dumps({"id": i, "text": f"{h} {h}"}) + "\n"
                            for i, h in enumerate(half)), encoding="utf-8")
    s = AuditSettings(passage_words=20, pearl=False, cache=False, recap_passages=0,
                      null_model="scripted:reference")
    folder = create_audit([str(text)], ["scripted:echo"], [], s, runs_dir=tmp_path / "runs")
    execute_audit(folder, say=lambda _: None)
    assert main(["report", str(folder)]) == 0
    (model,) = json.loads((folder / "report.json").read_text(encoding="utf-8"))["models"]
    null = model["extraction"]["text"]["null"]
    # by hand: 10 words "wNxM" of 4 characters: 10 * -log(5) nats
    assert [sp["log10_p"] for sp in null["spans"]] == pytest.approx(
        [10 * -math.log10(5)] * 3)
    assert null["beyond_chance"] == 3 and null["model"] == "reference"
    assert model["verdict"]["label"].startswith("memorized")
    text_col = json.loads((folder / "report.json").read_text(encoding="utf-8"))[
        "verdict_table"]["rows"][0][3]
    assert text_col == "3/3"  # the verdict and the "text reproduced" column agree
    assert "beyond chance" in (folder / "report.md").read_text(encoding="utf-8")
    run = folder / "runs" / load_manifest(folder)["models"][0]["runs"]["prefix_probe"]
    with RunStore(run) as store:
        kinds = [c["kind"] for c in store.calls()]
    assert kinds.count("score") == 6 and kinds.count("generate") == 3  # 2 scores per span
