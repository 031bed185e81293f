"""An audit of a served model whose log-probabilities are wrong (`recitation serve
--logprob-fault offset`): the detect run's integrity check fails, the report's details say
the white-box detectors were left out and why, and its section shows each invariant; with
--trust-logprobs they run, and the manifest and the run record the override."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recitation.cli import main
from recitation.models.local import LocalModel
from recitation.runs.store import RunStore
from recitation.serve import start_server
from recitation.serve.logprob_faults import LogprobFaultModel

pytestmark = pytest.mark.model


def _audit(url: str, runs: Path, *extra: str) -> Path:
    assert main(["audit", "--text", "kjv:famous-long", "--model", f"openai:smollm2@{url}",
                 "--passages", "2", "--n-controls", "2", "--no-pearl", "--recap-passages",
                 "0", "--bootstrap", "0", "--passage-words", "30", "--max-new-tokens", "16",
                 "--no-cache", "--runs-dir", str(runs), "--timeout", "900",  # not under test
                 *extra]) == 0
    return next(runs.iterdir())


def test_an_audit_reports_the_failed_check_and_the_override(tmp_path: Path,
                                                            local_model: LocalModel) -> None:
    with start_server(LogprobFaultModel(local_model, "offset")) as h:
        plain = _audit(h.url, tmp_path / "plain")
        trusted = _audit(h.url, tmp_path / "trusted", "--trust-logprobs")
    report = json.loads((plain / "report.json").read_text("utf-8"))
    [model] = report["models"]
    assert "whitebox" not in model["methods"]
    assert model["skipped"]["whitebox"].startswith(
        "the log-probability integrity check of 'smollm2' failed (repeat_predictable, "
        "generation_matches_score)") and "--trust-logprobs" in model["skipped"]["whitebox"]
    [checked] = report["sections"]["logprob_check"]["models"]
    assert checked["left_out"].keys() == {"whitebox"}
    md = (plain / "report.md").read_text("utf-8")
    assert "FAILED (repeat_predictable, generation_matches_score); left out: whitebox" in md
    assert "| repeat_predictable | failed | -3.11 | >= -1 |" in md
    assert 'id="logprob_check"' in (plain / "report.html").read_text("utf-8")

    manifest = json.loads((trusted / "audit.json").read_text("utf-8"))
    assert manifest["settings"]["trust_logprobs"] is True
    [entry] = manifest["models"]
    with RunStore(trusted / "runs" / entry["runs"]["detect"]) as store:
        assert store.get_meta("config")["params"]["trust_logprobs"] is True
    report = json.loads((trusted / "report.json").read_text("utf-8"))
    assert "loss" in report["models"][0]["detection"]["detectors"]
    assert "trusted anyway (--trust-logprobs)" in (trusted / "report.md").read_text("utf-8")
