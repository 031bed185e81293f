"""The model-spec and endpoint mistakes get the right diagnosis and fix, and a request that
timed out on a server on this machine is not sent again (models/endpoint.py, _sdk.py).

Unit tests of the diagnoses, then real servers on 127.0.0.1 (`recitation serve` with a fault
hook that answers the way vLLM does) through the openai SDK. No test races a clock: a held
request waits for an event that is set only when the test is over."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from recitation.cli import main
from recitation.errors import (
    AuthenticationError,
    BackendTimeout,
    ConfigError,
    EndpointError,
    LocalServerTimeout,
)
from recitation.models.base import GenerationRequest
from recitation.models.config import ModelConfig, parse_model_spec
from recitation.models.endpoint import check_base_url, diagnose_not_found
from recitation.models.managed import ManagedModel, RetryPolicy
from recitation.models.openai_backend import OpenAIModel
from recitation.models.registry import build_backend
from recitation.models.scripted import ScriptedModel
from recitation.runs.store import RunStore
from recitation.serve import FaultAction, RequestInfo, ServerHandle, start_server

ONE = [GenerationRequest(prompt="a b c", max_tokens=2)]


# -- a base URL without http:// ------------------------------------------------------------
@pytest.mark.parametrize(("url", "fixed"), [
    ("127.0.0.1:8011", "http://127.0.0.1:8011/v1"),
    ("localhost:8000/v1", "http://localhost:8000/v1"),
    ("127.0.0.1:8011/", "http://127.0.0.1:8011/v1"),
])
def test_a_base_url_without_a_scheme_says_the_spec_to_write(
        url: str, fixed: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused before a key is asked for, and never with advice about api_key_env."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError) as e:
        build_backend(ModelConfig(**parse_model_spec(f"openai:quick@{url}")))
    msg = str(e.value)
    assert "not an http:// or https:// URL" in msg and msg.endswith(f"openai:quick@{fixed}")
    assert "api_key_env" not in msg and "OPENAI_API_KEY" not in msg


def test_an_anthropic_base_url_gets_no_v1_and_a_good_url_passes() -> None:
    with pytest.raises(ConfigError, match=r"anthropic:m@http://127\.0\.0\.1:9$"):
        check_base_url("anthropic", "m", "127.0.0.1:9")
    check_base_url("openai", "m", "https://api.example.com/v1")
    check_base_url("openai", "m", None)


def test_the_missing_key_message_advises_no_option_a_command_lacks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(AuthenticationError) as e:
        build_backend(ModelConfig(**parse_model_spec("openai:m@http://10.1.2.3:8000/v1")))
    msg = str(e.value)
    assert "OPENAI_API_KEY" in msg and "api_key_env" not in msg
    assert "openai:MODEL@http://127.0.0.1:8000/v1" in msg  # a server here is sent no key


# -- HTTP 404: which mistake -------------------------------------------------------------
def _lister(answers: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    asked: list[str] = []

    async def list_models(base: str) -> list[str] | None:
        asked.append(base)
        return answers.get(base)
    return list_models, asked


@pytest.mark.parametrize(("answers", "model", "base", "said"), [
    ({"http://h/v1": ["quick", "other"]}, "quik", "http://h/v1",
     "serves no model named 'quik'; it serves 'quick', 'other': write the model as "
     "openai:quick@http://h/v1"),
    ({"http://h/v1": ["quick"]}, "quick", "http://h", "the base URL http://h lacks /v1 (the "
     "server's API is at http://h/v1): write the model as openai:quick@http://h/v1"),
    ({"http://h/v1": ["quick"]}, "nope", "http://h", "lacks /v1 (the server's API is at "
     "http://h/v1); and it serves no model named 'nope' (it serves 'quick'): write the "
     "model as openai:quick@http://h/v1"),
    ({}, "m", "http://h/v1", "nothing at http://h/v1 lists models (GET http://h/v1/models)"),
    ({}, "m", "http://h", "(GET http://h/models, http://h/v1/models)"),
    ({"http://h/v1": []}, "m", "http://h/v1", "serves no model"),
])
def test_a_404_is_told_apart(answers: dict[str, list[str]], model: str, base: str,
                             said: str) -> None:
    lister, _ = _lister(answers)
    got = asyncio.run(diagnose_not_found(lister, "openai", model, base))
    assert got is not None and said in got, got


def test_a_404_for_a_served_model_is_left_as_it_was() -> None:
    lister, asked = _lister({"http://h/v1": ["m"]})
    assert asyncio.run(diagnose_not_found(lister, "openai", "m", "http://h/v1/")) is None
    assert asked == ["http://h/v1"]


def test_many_served_names_are_cut_short() -> None:
    lister, _ = _lister({"http://h/v1": [f"model-{i}" for i in range(20)]})
    got = asyncio.run(diagnose_not_found(lister, "openai", "model-x", "http://h/v1"))
    assert got is not None and "and 12 more" in got and "model-19" not in got


def _vllm_like(served: str):  # type: ignore[no-untyped-def]
    """A fault hook that answers as vLLM: routes only under /v1, and HTTP 404 for a model
    name it does not serve."""
    def hook(info: RequestInfo) -> FaultAction | None:
        if not info.path.startswith("/v1/"):
            return FaultAction.json_body({"detail": "Not Found"}, 404)
        name = (info.body or {}).get("model")
        if name is not None and name != served:
            return FaultAction.json_body({"object": "error", "message": f"The model `{name}` "
                                          "does not exist.", "type": "NotFoundError",
                                          "code": 404}, 404)
        return None
    return hook


@pytest.fixture
def vllm_like() -> Iterator[ServerHandle]:
    with start_server(ScriptedModel(name="quick"), fault_hook=_vllm_like("quick")) as h:
        yield h


async def test_a_real_server_says_the_name_or_the_path(vllm_like: ServerHandle) -> None:
    url = vllm_like.url  # http://127.0.0.1:PORT/v1
    wrong = OpenAIModel("quik", base_url=url, api_key_env=None)
    with pytest.raises(EndpointError) as e:
        await wrong.generate(ONE)
    assert f"it serves 'quick': write the model as openai:quick@{url}" in str(e.value)
    assert e.value.fatal and not e.value.retryable and "--resume" not in str(e.value)
    with pytest.raises(EndpointError, match="HTTP 404"):  # asked once, then remembered
        await wrong.generate(ONE)
    await wrong.aclose()
    asked = [i.path for i in vllm_like.received if i.method == "GET"]
    assert asked == ["/v1/models"]
    no_v1 = OpenAIModel("quick", base_url=vllm_like.root_url, api_key_env=None)
    with pytest.raises(EndpointError, match=rf"lacks /v1 .*openai:quick@{url}$"):
        await no_v1.score(["a b c"])
    await no_v1.aclose()
    right = OpenAIModel("quick", base_url=url, api_key_env=None)
    assert (await right.generate(ONE))[0].text  # the fix works
    await right.aclose()


def _text(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps({"id": f"t{i}", "text": " ".join(
        f"t{i}w{j}" for j in range(30))}) + "\n" for i in range(n)), encoding="utf-8")
    return path


def test_an_audit_stops_at_a_wrong_name_with_the_fix_and_no_resume(
        vllm_like: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["audit", "--text", str(_text(tmp_path / "t.jsonl", 3)), "--model",
                 f"openai:quik@{vllm_like.url}", "--passage-words", "30", "--no-pearl",
                 "--null-model", "none", "--recap-passages", "0", "--no-cache",
                 "--runs-dir", str(tmp_path / "runs")])
    out = capsys.readouterr()
    assert code == 1
    assert f"write the model as openai:quick@{vllm_like.url}" in out.err
    assert "--resume" not in out.err + out.out
    (run,) = (tmp_path / "runs").glob("audit-*/runs/*")
    with RunStore(run) as store:
        assert store.get_meta("status") == "failed"
    posts = [i for i in vllm_like.received if i.method == "POST"]
    assert len(posts) <= 3 + 4  # the run stopped: not every item re-tried one by one


# -- a timeout on a server on this machine -------------------------------------------------
class Held:
    """A fault hook that holds every request whose body contains ``marker`` until
    :meth:`release` (the server "still computing" it, whether or not its client left)."""

    def __init__(self, marker: str) -> None:
        self.marker, self.done = marker, threading.Event()

    def __call__(self, info: RequestInfo) -> FaultAction | None:
        if self.marker in json.dumps(info.body or {}):
            self.done.wait(120)
        return None

    def release(self) -> None:
        self.done.set()


async def test_a_local_timeout_is_not_sent_again() -> None:
    held = Held("a b c")
    with start_server(ScriptedModel(), fault_hook=held) as h:
        try:
            m = ManagedModel(OpenAIModel("scripted", base_url=h.url, api_key_env=None,
                                         timeout=5.0),  # ample to arrive
                             retry=RetryPolicy(max_attempts=4, base_delay=0))
            with pytest.raises(LocalServerTimeout) as e:
                await m.generate(ONE)
            assert isinstance(e.value, BackendTimeout) and not e.value.retryable
            assert "not sent again" in str(e.value) and "--timeout SECONDS" in str(e.value)
            assert "after 1 attempt(s)" in str(e.value)
            assert len(h.received) == 1 and m.stats.failures == 1
            await m.aclose()
        finally:
            held.release()


def test_a_remote_timeout_is_still_retried() -> None:
    """A remote server's timeout is retried (BackendTimeout); a server here can be told to
    resend too (one that abandons a request its client left: the fault harness)."""
    assert OpenAIModel("x", base_url="http://10.1.2.3:9/v1", api_key_env=None).resend_timeouts
    assert BackendTimeout("t").retryable
    here = "openai:x@http://localhost:9/v1"
    assert not build_backend(ModelConfig(**parse_model_spec(here))).resend_timeouts
    told = build_backend(ModelConfig(**parse_model_spec(here), resend_timeouts=True))
    assert told.resend_timeouts


def test_an_audit_sends_a_timed_out_request_once_and_goes_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--timeout``: the held passage fails once, named in the run's events with the
    option; the others are answered (each within 6 s, or failed alike: what is asserted
    holds on a busy machine too); no request reaches the server twice. Resumed with a
    longer ``--timeout`` once the server is free, the audit finishes."""
    held = Held("t1w0")
    runs = tmp_path / "runs"
    with start_server(ScriptedModel(name="quick"), fault_hook=held) as h:
        try:
            code = main(["audit", "--text", str(_text(tmp_path / "t.jsonl", 3)), "--model",
                         f"openai:quick@{h.url}", "--passage-words", "30", "--no-pearl",
                         "--null-model", "none", "--recap-passages", "0", "--no-cache",
                         "--timeout", "6", "--concurrency", "2", "--runs-dir", str(runs)])
            bodies = [json.dumps(i.body, sort_keys=True) for i in h.received
                      if i.method == "POST"]
        finally:
            held.release()
        (folder,) = runs.glob("audit-*")
        said = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
        assert f"--resume {folder} --timeout SECONDS' finishes them" in said
        resumed = main(["audit", "--resume", str(folder), "--timeout", "120",
                        "--runs-dir", str(runs)])
    assert code == 4  # incomplete: the held passage failed
    assert len(bodies) == len(set(bodies)) == 3  # each passage sent once
    (run,) = (folder / "runs").glob("*")
    with RunStore(run) as store:
        cfg = store.get_meta("config")["model"]
        failed = {e["item_id"]: e["message"] for e in store.events() if e["level"] == "error"}
        done, items = store.done_items(), {i for i, _ in store.items()}
    assert (cfg["timeout"], cfg["concurrency"]) == (6.0, 2)  # as created; resumed with 120
    held_item = next(i for i in items if i.endswith("t1"))
    assert held_item in failed and "no answer within 6 s" in failed[held_item]
    assert "--timeout SECONDS" in failed[held_item]
    assert resumed == 0 and done == items


def test_a_resumed_run_may_change_only_how_calls_are_sent(tmp_path: Path) -> None:
    from recitation.runs.config import parse_config
    from recitation.runs.runner import with_call_settings
    from recitation.serve.chaos import load_config

    data = load_config("http://127.0.0.1:9/v1", _text(tmp_path / "t.jsonl", 2), concurrency=4,
                       timeout=5, max_attempts=2, key_env="K")
    cfg = parse_config(data, source="test")
    changed = with_call_settings(cfg, {"timeout": 300.0, "concurrency": 1})
    assert (changed.model.timeout, changed.model.concurrency) == (300.0, 1)
    assert changed.model.model == cfg.model.model and changed.params == cfg.params
    with pytest.raises(ConfigError, match="not base_url, model"):
        with_call_settings(cfg, {"model": "other", "base_url": "http://x/v1"})


class Garbled:
    """A fault hook: malformed JSON for every request about passage t1, and for the first
    about passage t2."""

    def __init__(self) -> None:
        self.lock, self.t2 = threading.Lock(), 0

    def __call__(self, info: RequestInfo) -> FaultAction | None:
        body = json.dumps(info.body or {})
        if "t1w0" in body:
            return FaultAction.malformed_json()
        if "t2w0" in body:
            with self.lock:
                self.t2 += 1
                if self.t2 == 1:
                    return FaultAction.malformed_json()
        return None


def test_malformed_replies_never_kill_an_audit(tmp_path: Path) -> None:
    """A malformed reply is retried; a passage whose replies stay malformed fails alone and
    the run goes on: every other passage's answer is kept."""
    with start_server(ScriptedModel(name="quick"), fault_hook=Garbled()) as h:
        code = main(["audit", "--text", str(_text(tmp_path / "t.jsonl", 4)), "--model",
                     f"openai:quick@{h.url}", "--passage-words", "30", "--no-pearl",
                     "--null-model", "none", "--recap-passages", "0", "--no-cache",
                     "--runs-dir", str(tmp_path / "runs")])
    assert code == 4
    (run,) = (tmp_path / "runs").glob("audit-*/runs/*")
    with RunStore(run) as store:
        done, items = store.done_items(), {i for i, _ in store.items()}
        attempts = {json.dumps(c["request"]): c["attempts"] for c in store.calls()
                    if c["response"] is not None}
    assert done == {i for i in items if not i.endswith("t1")}
    assert sorted(attempts.values()) == [1, 1, 2]  # t2 answered on its second attempt


def test_detect_takes_a_timeout_as_the_message_says() -> None:
    from recitation.cli import build_parser
    from recitation.detect.cli import build_config

    spec = "openai:x@http://127.0.0.1:9/v1"
    args = build_parser().parse_args(["detect", "--model", spec, "--timeout", "300"])
    assert build_config(args).model.timeout == 300.0
    plain = build_parser().parse_args(["detect", "--model", spec])
    assert build_config(plain).model.timeout == ModelConfig().timeout
