"""The contract between methods and models: capabilities and the tokenizer.

Each capability is checked on the real embedded SmolLM2 (``local``) and on the ``openai``
backend talking to ``recitation serve`` (which serves the same SmolLM2), so a flag that
lies about its backend fails here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from recitation.errors import ConfigError
from recitation.extract.records import Tally
from recitation.models.base import Generation, GenerationRequest, Model
from recitation.models.config import ModelConfig, backend_names
from recitation.models.local import LocalModel
from recitation.models.managed import Limits, ManagedModel
from recitation.models.openai_backend import OpenAIModel
from recitation.models.registry import backend_class, build_backend, capabilities_of
from recitation.serve import ServerHandle, start_server

TEXT = "In the beginning God created the heaven and the earth."


@pytest.fixture(scope="module")
def local_server(local_model: LocalModel) -> Iterator[ServerHandle]:
    with start_server(local_model) as h:
        yield h


@pytest.fixture
def remote(local_server: ServerHandle) -> OpenAIModel:
    return OpenAIModel("smollm2", base_url=local_server.url, api_key_env=None)


class CallSizes(Model):
    """Records how many requests each backend call carried (delegates to ``model``)."""

    def __init__(self, model: Model) -> None:
        self.model, self.backend, self.name = model, model.backend, model.name
        self.capabilities = model.capabilities
        self.sizes: list[int] = []

    def identity(self) -> dict[str, object]:
        return self.model.identity()

    async def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        self.sizes.append(len(requests))
        return await self.model.generate(requests)


def five_prompts() -> list[GenerationRequest]:
    return [GenerationRequest(prompt=f"Verse {i}: In the beginning", max_tokens=2)
            for i in range(5)]


# -- backend names, in one place ---------------------------------------------------------------
def test_every_backend_name_maps_to_its_class() -> None:
    assert {"local", "scripted"} <= set(backend_names())  # what the tests below use
    for name in backend_names():
        assert backend_class(name).backend == name
        assert capabilities_of(name) == backend_class(name).capabilities
    with pytest.raises(ConfigError, match="unknown backend 'ollama'; choose from local, openai"):
        backend_class("ollama")


def test_only_the_local_backend_runs_here_and_has_a_tokenizer() -> None:
    assert [b for b in backend_names() if capabilities_of(b).local] == ["local"]
    assert [b for b in backend_names() if capabilities_of(b).tokenizer] == ["local"]
    assert [b for b in backend_names() if capabilities_of(b).batching] == ["local"]
    assert build_backend(ModelConfig(backend="scripted", model="x")).tokenizer() is None


# -- tokenizer ---------------------------------------------------------------------------------
@pytest.mark.model
async def test_local_tokenizer_names_the_tokens_score_returns(local_model: LocalModel) -> None:
    assert local_model.capabilities.tokenizer
    tok = local_model.tokenizer()
    ids = tok.encode(TEXT)
    assert tok.decode(ids) == TEXT
    assert tok.vocab_size == 49152 and all(0 <= i < tok.vocab_size for i in ids)
    [scores] = await local_model.score([TEXT])
    assert tuple(tok.tokens(TEXT)) == scores.tokens  # the same ids the model scores
    assert len(ids) == len(scores.logprobs) + 1


@pytest.mark.model
def test_wrappers_hand_out_the_backend_tokenizer(local_model: LocalModel) -> None:
    managed = ManagedModel(local_model)
    for view in (managed, Tally(managed, "dsp")):
        tok = view.tokenizer()
        assert tok is not None and tok.encode(TEXT) == local_model.tokenizer().encode(TEXT)


@pytest.mark.model
def test_openai_backend_exposes_no_tokenizer(remote: OpenAIModel) -> None:
    assert not remote.capabilities.tokenizer
    assert remote.tokenizer() is None and ManagedModel(remote).tokenizer() is None


# -- batching ------------------------------------------------------------------------------------
@pytest.mark.model
async def test_local_requests_go_to_the_backend_in_batches(local_model: LocalModel) -> None:
    assert local_model.capabilities.batching
    spy = CallSizes(local_model)
    out = await ManagedModel(spy, limits=Limits(batch_size=4)).generate(five_prompts())
    assert spy.sizes == [4, 1]
    single = [(await local_model.generate([r]))[0].text for r in five_prompts()]
    assert [g.text for g in out] == single


@pytest.mark.model
async def test_openai_requests_go_one_per_backend_call(remote: OpenAIModel,
                                                       local_model: LocalModel) -> None:
    assert not remote.capabilities.batching
    spy = CallSizes(remote)
    out = await ManagedModel(spy, limits=Limits(batch_size=4)).generate(five_prompts())
    await remote.aclose()
    assert spy.sizes == [1] * 5
    assert [g.text for g in out] == [g.text for g in await local_model.generate(five_prompts())]


# -- one cache directory ---------------------------------------------------------------------
def test_models_and_responses_share_one_cache_directory(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    from recitation._cachedir import cache_dir
    from recitation.models.local import model_cache_dir
    from recitation.runs.store import default_cache_path

    monkeypatch.setenv("RECITATION_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("RECITATION_MODEL_CACHE_DIR", raising=False)
    assert cache_dir() == tmp_path / "c"
    assert model_cache_dir() == tmp_path / "c" / "models"
    assert default_cache_path() == tmp_path / "c" / "responses.sqlite"
    monkeypatch.setenv("RECITATION_MODEL_CACHE_DIR", str(tmp_path / "weights"))
    assert model_cache_dir() == tmp_path / "weights"
