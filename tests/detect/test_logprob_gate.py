"""The log-probability integrity check before a detect run's first scoring call
(recitation.detect.logprob_gate): once per model, stored in the run store and read back on
resume; a failure leaves the score-based detectors out with the reason, PEARL still runs;
--trust-logprobs uses the numbers anyway and is recorded. On the scripted model (fast), and
through the CLI against `recitation serve --logprob-fault offset` (the real model)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from test_detect_job import CONTROLS, _jsonl  # the same controls and writer

from recitation.detect.logprob_gate import META_PREFIX, LogprobGate
from recitation.models.integrity import SCORED_TEXTS
from recitation.models.local import LocalModel
from recitation.models.managed import ManagedModel
from recitation.models.scripted import ScriptedModel
from recitation.runs.jobs import make_job
from recitation.runs.store import RunStore
from recitation.serve import start_server
from recitation.serve.logprob_faults import LogprobFaultModel

MEMBERS = ["The LORD is my shepherd; I shall not want. He maketh me to lie down in green "
           "pastures: he leadeth me beside the still waters.",
           "Blessed are the meek: for they shall inherit the earth. Blessed are they which do "
           "hunger and thirst after righteousness: for they shall be filled."]
def params(tmp_path: Path, **kw: Any) -> dict[str, Any]:
    return {"members": [_jsonl(tmp_path / "m.jsonl", MEMBERS)],
            "controls": [_jsonl(tmp_path / "c.jsonl", CONTROLS)],
            "detectors": ["whitebox", "pearl"], "perturbations": ["bitflip"],
            "max_intensity": 1, "outputs": 1, "n_bootstrap": 0} | kw


def run_job(tmp_path: Path, model: Any, **kw: Any) -> list[dict[str, Any]]:
    job = make_job("detect", params(tmp_path, **kw), seed=0)
    return asyncio.run(job.run_items(job.items(), model))


def detectors(records: list[dict[str, Any]]) -> set[str]:
    return {s["detector"] for r in records for s in r["scores"]}


def test_a_failed_check_leaves_the_score_based_detectors_out(tmp_path: Path) -> None:
    records = run_job(tmp_path, LogprobFaultModel(ScriptedModel(), "offset"))
    assert "loss" not in detectors(records) and "pearl_bitflip_sensitivity" in detectors(records)
    for r in records:
        [error] = r["errors"]
        assert error.startswith("whitebox: whitebox needs logprobs")
        assert "integrity check of 'scripted' failed (repeat_predictable)" in error
        assert "--trust-logprobs" in error


def test_trust_logprobs_uses_them_and_a_passing_model_is_untouched(tmp_path: Path) -> None:
    trusted = run_job(tmp_path, LogprobFaultModel(ScriptedModel(), "offset"),
                      trust_logprobs=True)
    assert "loss" in detectors(trusted) and not any(r["errors"] for r in trusted)
    model = ScriptedModel()
    fine = run_job(tmp_path, model)
    assert "loss" in detectors(fine) and not any(r["errors"] for r in fine)
    assert len(model.scored) == SCORED_TEXTS + 8  # the check once; 4 samples, lower-cased too
    pearl_only = ScriptedModel()
    run_job(tmp_path, pearl_only, detectors=["pearl"])
    assert pearl_only.scored == []  # no log-probabilities used: no check


def test_the_report_is_stored_once_and_read_back_on_resume(tmp_path: Path) -> None:
    inner = LogprobFaultModel(ScriptedModel(), "batch")
    with RunStore(tmp_path / "run", create=True) as store:
        model = ManagedModel(inner, store=store)
        report = asyncio.run(LogprobGate(trust=False).ensure(model))
        assert report is not None and report.failed == ["repeatable"]  # one text a call
        calls = len(inner.inner.scored)  # type: ignore[attr-defined]
        assert calls == SCORED_TEXTS and store.calls() == []  # not answered from the store
        [key] = [k for k in store.all_meta() if k.startswith(META_PREFIX)]
        stored = store.get_meta(key)
        assert stored["trusted"] is False and stored["report"]["model"] == "scripted"
        again = LogprobGate(trust=True)  # a resumed run: a new job, the same store
        assert asyncio.run(again.ensure(model)) == report
        assert len(inner.inner.scored) == calls  # type: ignore[attr-defined]
        assert again.withheld(model) == frozenset()  # trusted


def _detect(url: str, runs: Path, *extra: str) -> tuple[int, RunStore]:
    from recitation.cli import main

    code = main(["detect", "--model", f"openai:smollm2@{url}", "--members", "kjv:famous",
                 "--controls", "builtin:kjv-devotional", "--limit", "2", "--detectors",
                 "whitebox", "pearl", "--perturbations", "bitflip", "--max-intensity", "1",
                 "--outputs", "1", "--max-new-tokens", "8", "--bootstrap", "0", "--no-cache",
                 "--runs-dir", str(runs),
                 "--timeout", "900", *extra])  # slowness is not under test
    return code, RunStore(next(runs.iterdir()))


@pytest.mark.model
def test_detect_against_a_faulty_server_leaves_the_logprob_detectors_out(
        tmp_path: Path, local_model: LocalModel) -> None:
    with start_server(LogprobFaultModel(local_model, "offset")) as h:
        code, store = _detect(h.url, tmp_path / "plain")
        with store:
            records = [r for _, r in store.results()]
            assert code == 0 and not store.get_meta("config")["params"]["trust_logprobs"]
            assert "loss" not in detectors(records)
            assert "pearl_bitflip_sensitivity" in detectors(records)
            assert all("integrity check of 'smollm2' failed (repeat_predictable, "
                       "generation_matches_score)" in r["errors"][0] for r in records)
        code, store = _detect(h.url, tmp_path / "trusted", "--trust-logprobs")
        with store:
            records = [r for _, r in store.results()]
            assert code == 0 and store.get_meta("config")["params"]["trust_logprobs"]
            assert "loss" in detectors(records) and not any(r["errors"] for r in records)
            [check] = [v for k, v in store.all_meta().items() if k.startswith(META_PREFIX)]
            assert check["trusted"] and check["report"]["results"]


def test_a_cached_run_reads_the_check_its_cached_answers_got(tmp_path: Path) -> None:
    """With the response cache on, the report is cached as the answers are: a later run
    served from the cache reads it back; without the cache it checks again."""
    from recitation.runs.store import ResponseCache

    inner = ScriptedModel()
    cache = ResponseCache(tmp_path / "responses.sqlite")
    try:
        first = asyncio.run(LogprobGate(trust=False).ensure(ManagedModel(inner, cache=cache)))
        assert len(inner.scored) == SCORED_TEXTS
        again = asyncio.run(LogprobGate(trust=False).ensure(ManagedModel(inner, cache=cache)))
        assert again == first and len(inner.scored) == SCORED_TEXTS
        asyncio.run(LogprobGate(trust=False).ensure(ManagedModel(inner)))  # --no-cache
        assert len(inner.scored) == 2 * SCORED_TEXTS
    finally:
        cache.close()


def test_a_reference_model_that_fails_is_not_used(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference model is checked too: when it fails, the target's own scores are used
    and the reference score is left out with the reason (trusted: used)."""
    from recitation.detect.job import DetectJob

    monkeypatch.setattr(DetectJob, "_reference_model",
                        lambda self, cfg, target: LogprobFaultModel(ScriptedModel(), "offset"))
    ref = {"reference_model": {"backend": "scripted", "model": "reference"}}
    records = run_job(tmp_path, ScriptedModel(), **ref)
    assert "loss" in detectors(records) and "reference" not in detectors(records)
    assert all(r["errors"] == ["reference: the log-probability integrity check of 'scripted' "
                               "failed (repeat_predictable): its log-probabilities are not "
                               "used (`recitation check` shows the figures; --trust-logprobs "
                               "uses them anyway)"] for r in records)
    trusted = run_job(tmp_path, ScriptedModel(), trust_logprobs=True, **ref)
    assert "reference" in detectors(trusted) and not any(r["errors"] for r in trusted)
