"""Each run stores what answered it: the target's (and local helpers') identity, weights file
and SHA-256, computed independently here with hashlib."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from recitation.models.local import smollm2_gguf_path
from recitation.report.collect import _provenance
from recitation.runs import runner
from recitation.runs.config import parse_config
from recitation.runs.store import RunStore

# King James Bible (public domain)
TEXTS = ["In the beginning God created the heaven and the earth. And the earth was without "
         "form, and void; and darkness was upon the face of the deep."]


def test_a_run_records_the_gguf_weights_and_their_sha256(tmp_path: Path) -> None:
    src = tmp_path / "passages.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n"
                           for i, t in enumerate(TEXTS)))
    cfg = parse_config({"job": "prefix_probe", "cache": False, "model": {
        "backend": "local", "model": "smollm2"}, "params": {"source": "jsonl",
                                                             "path": str(src)}})
    run = runner.create_run(cfg, tmp_path / "runs")  # creating does not load the model
    gguf = smollm2_gguf_path()
    expected = hashlib.sha256(gguf.read_bytes()).hexdigest()
    with RunStore(run) as store:
        target = store.get_meta("model_provenance")["target"]
        shown = _provenance(store)["model_weights"]["target"]
    assert target["weights_sha256"] == expected
    assert Path(target["path"]).resolve() == gguf.resolve()
    assert target["model"] == "SmolLM2-135M-Instruct.Q4_1" and target["backend"] == "local"
    assert shown == target


def test_api_models_record_their_server_and_no_key(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECITATION_TEST_KEY", "sk-provenance-fake-123456")
    src = tmp_path / "p.jsonl"
    src.write_text(json.dumps({"id": 0, "text": TEXTS[0]}) + "\n")
    cfg = parse_config({"job": "prefix_probe", "cache": False, "model": {
        "backend": "openai", "model": "gpt-x", "base_url": "http://127.0.0.1:9/v1",
        "api_key_env": "RECITATION_TEST_KEY"},
        "params": {"source": "jsonl", "path": str(src)}})
    run = runner.create_run(cfg, tmp_path / "runs")
    with RunStore(run) as store:
        target = store.get_meta("model_provenance")["target"]
    assert target == {"backend": "openai", "model": "gpt-x", "base_url": "http://127.0.0.1:9/v1"}
    assert "sk-provenance" not in (run / "run.sqlite").read_bytes().decode("latin-1")
