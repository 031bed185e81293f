"""Run store (real SQLite, WAL) and config validation."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from recitation.errors import ConfigError, StoreError
from recitation.runs.config import load_config, parse_config
from recitation.runs.store import CallRecord, ResponseCache, RunStore


def test_store_round_trip_and_wal(tmp_path: Path) -> None:
    with RunStore(tmp_path / "r", create=True) as s:
        s.set_meta("config", {"a": 1})
        s.record_call(CallRecord("k1", "generate", "b", "m", {"p": 1}, {"text": "x"}, 3, 4,
                                 0.5, 0.01))
        s.record_call(CallRecord("k2", "generate", "b", "m", {"p": 2}, None, error="boom"))
        s.put_result("item-1", "job", {"score": 0.5})
        s.log_event("error", "failed", item_id="item-2")
    db = sqlite3.connect(tmp_path / "r" / "run.sqlite")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with RunStore(tmp_path / "r") as s:
        assert s.get_meta("config") == {"a": 1}
        assert s.lookup_call("k1") == {"text": "x"}
        assert s.lookup_call("k2") is None  # failed calls are not reused
        assert s.done_items() == {"item-1"}
        assert list(s.results("job")) == [("item-1", {"score": 0.5})]
        t = s.call_totals()
        assert (t["calls"], t["input_tokens"], t["output_tokens"], t["errors"]) == (2, 3, 4, 1)
        assert s.events()[0]["item_id"] == "item-2"


def test_missing_store_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no run store"):
        RunStore(tmp_path / "nothing")


def test_response_cache(tmp_path: Path) -> None:
    c = ResponseCache(tmp_path / "x" / "c.sqlite")
    assert c.get("k") is None
    c.put("k", "generate", {"text": "t"})
    assert ResponseCache(tmp_path / "x" / "c.sqlite").get("k") == {"text": "t"}


def test_config_errors_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"model\.backend: unknown backend 'gpt'; choose"):
        parse_config({"job": "prefix_probe", "model": {"backend": "gpt"}})
    with pytest.raises(ConfigError, match=r"model\.concurrency: Input should be greater"):
        parse_config({"job": "prefix_probe", "model": {"concurrency": 0}})
    with pytest.raises(ConfigError, match=r"model\.temprature: Extra inputs"):
        parse_config({"job": "prefix_probe", "model": {"temprature": 0}})
    with pytest.raises(ConfigError, match=r"'api_key' is not allowed: API keys are read from"):
        parse_config({"job": "x", "model": {"backend": "openai", "api_key": "sk-123"}})
    with pytest.raises(ConfigError, match=r"job: Field required"):
        parse_config({})
    bad = tmp_path / "bad.yaml"
    bad.write_text("job: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "absent.yaml")


def test_job_params_and_names_are_validated() -> None:
    from recitation.runs.jobs import make_job

    with pytest.raises(ConfigError, match="did you mean 'prefix_probe'"):
        make_job("prefix_prob", {}, 0)
    with pytest.raises(ConfigError, match=r"params\.max_words: Input should be greater"):
        make_job("prefix_probe", {"max_words": 1}, 0)
    with pytest.raises(ConfigError, match=r"params\.source: Value error|needs 'path'"):
        make_job("prefix_probe", {"source": "jsonl"}, 0)


def test_api_key_env_false_means_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from recitation.models.registry import build_backend

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = parse_config({"job": "x", "model": {"backend": "openai", "model": "m",
                                              "base_url": "http://127.0.0.1:9/v1",
                                              "api_key_env": False}})
    assert build_backend(cfg.model).backend == "openai"
    with pytest.raises(Exception, match="OPENAI_API_KEY"):  # a remote endpoint: its key
        build_backend(cfg.model.model_copy(update={"api_key_env": None,
                                                   "base_url": "http://10.0.0.9:9/v1"}))
    # on this machine the default variable may be unset (tests/models/test_openai_backend.py)
    assert build_backend(cfg.model.model_copy(update={"api_key_env": None})).name == "m"
