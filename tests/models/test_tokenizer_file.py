"""``--tokenizer PATH``: a served model's tokenizer named by the user (models/tokenizer_file.py),
the access it gives DC-PDD over an API, its check against the server's tokens, and the
errors that name the fix. Scripted models only (fast); the real vLLM server is
tests/models/test_vllm.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from recitation.audit.run import AuditSettings, plan_methods
from recitation.errors import ConfigError
from recitation.methods import Access
from recitation.models.base import Capabilities, TokenScores
from recitation.models.scripted import ScriptedModel
from recitation.models.tokenizer_file import FileTokenizer, tokenizer_json, tokens_as_served
from recitation.runs.jobs import make_job

MEMBERS = ["In the beginning God created the heaven and the earth .",
           "And the earth was without form , and void ; and darkness was upon the deep ."]
CONTROLS = ["The lamp of the watchman burned until the morning , and the city slept .",
            "Remember the mapmaker , who drew the rivers and the roads of a country ."]
CORPUS = "And God said , Let there be light : and there was light .\n\nAnd God saw the light ."


def word_tokenizer(folder: Path, texts: list[str]) -> Path:
    """A tokenizer.json of whitespace words (what ScriptedModel.score names as tokens)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = sorted({w for t in texts for w in t.split()})
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(["[UNK]", *words])},
                                     unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    return folder


@pytest.fixture
def words(tmp_path: Path) -> Path:
    return word_tokenizer(tmp_path / "tok", MEMBERS + CONTROLS + CORPUS.split("\n\n"))


def test_a_folder_or_its_file_is_read_and_a_bad_path_names_the_fix(
        words: Path, tmp_path: Path) -> None:
    assert tokenizer_json(words) == tokenizer_json(words / "tokenizer.json")
    tok = FileTokenizer(words)
    assert tok.tokens(MEMBERS[0]) == MEMBERS[0].split()
    assert tok.decode(tok.encode(MEMBERS[0])) == MEMBERS[0]
    assert tok.vocab_size == len(set(" ".join(MEMBERS + CONTROLS + [CORPUS]).split())) + 1
    (tmp_path / "empty").mkdir()
    (tmp_path / "bad.json").write_text("{}")
    for path, says in [(tmp_path / "nope", "no such file or folder"),
                       (tmp_path / "empty", "has no tokenizer.json"),
                       (tmp_path / "bad.json", "is not a tokenizer.json")]:
        with pytest.raises(ConfigError) as e:
            FileTokenizer(path)
        assert says in str(e.value) and "--tokenizer PATH" in str(e.value), e.value


def test_the_servers_tokens_are_checked_and_renamed(words: Path, tmp_path: Path) -> None:
    tok = FileTokenizer(words)
    served = asyncio.run(ScriptedModel().score([MEMBERS[0]]))[0]
    named = tokens_as_served(MEMBERS[0], served, tok, "the server")
    assert named.tokens == tuple(MEMBERS[0].split()) and named.logprobs == served.logprobs
    assert named.token_ids == tuple(tok.encode(MEMBERS[0]))
    fewer = TokenScores(tokens=served.tokens[:-1], logprobs=served.logprobs[:-1])
    with pytest.raises(ConfigError, match="11 tokens against the server's 10"):
        tokens_as_served(MEMBERS[0], fewer, tok, "the server")
    other = FileTokenizer(word_tokenizer(tmp_path / "other", ["In the beginning"]))
    with pytest.raises(ConfigError) as e:  # God is [UNK] for it: the server says God
        tokens_as_served(MEMBERS[0], served, other, "the server")
    assert "token 3" in str(e.value) and "'[UNK]'" in str(e.value) and "'God'" in str(e.value)


# -- DC-PDD over an API --------------------------------------------------------------------


class Served(ScriptedModel):
    """An API: log-probabilities, no tokenizer (as the openai backend)."""

    capabilities = Capabilities(logprobs=True)


class WithOwn(ScriptedModel):
    """The same scores, with the same tokenizer as its own (as the local backend)."""

    capabilities = Capabilities(logprobs=True, tokenizer=True)

    def __init__(self, tok: FileTokenizer) -> None:
        super().__init__()
        self._tok = tok

    def tokenizer(self) -> FileTokenizer:  # type: ignore[override]
        return self._tok


def _params(tmp_path: Path, **kw: Any) -> dict[str, Any]:
    def jsonl(name: str, texts: list[str]) -> str:
        path = tmp_path / name
        path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n"
                                for i, t in enumerate(texts)))
        return str(path)

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS)
    return {"members": [jsonl("m.jsonl", MEMBERS)], "controls": [jsonl("c.jsonl", CONTROLS)],
            "detectors": ["dcpdd"], "n_bootstrap": 10, "dcpdd_corpus": str(corpus)} | kw


def _dcpdd(tmp_path: Path, model: ScriptedModel, **kw: Any) -> list[dict[str, Any]]:
    job = make_job("detect", _params(tmp_path, **kw), 0)
    out: list[dict[str, Any]] = asyncio.run(job.run_items(job.items(), model))
    return out


def test_dcpdd_over_an_api_with_a_named_tokenizer_scores_as_with_its_own(
        words: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECITATION_CACHE_DIR", str(tmp_path / "cache"))
    refused = _dcpdd(tmp_path, Served())
    assert all(not r["scores"] for r in refused)
    assert "name the model's tokenizer with --tokenizer PATH" in refused[0]["errors"][0]
    named = _dcpdd(tmp_path, Served(), tokenizer=str(words))
    own = _dcpdd(tmp_path, WithOwn(FileTokenizer(words)))
    got = {r["sample"]["id"]: r["scores"][0]["score"] for r in named}
    want = {r["sample"]["id"]: r["scores"][0]["score"] for r in own}
    assert got == want and len(got) == 4


def test_dcpdd_refuses_a_tokenizer_that_is_not_the_servers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECITATION_CACHE_DIR", str(tmp_path / "cache"))
    wrong = word_tokenizer(tmp_path / "wrong", ["In the beginning"])
    with pytest.raises(ConfigError, match="does not tokenize as backend 'scripted'"):
        _dcpdd(tmp_path, Served(), tokenizer=str(wrong))


def test_the_detect_params_refuse_a_bad_tokenizer_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        make_job("detect", _params(tmp_path, tokenizer=str(tmp_path / "nope")), 0)
    assert "--tokenizer" in str(e.value) and "tokenizer.json" in str(e.value)


def test_the_audit_runs_dcpdd_over_an_api_only_with_a_tokenizer(words: Path) -> None:
    spec = "openai:served@http://127.0.0.1:9/v1"
    chosen, skipped = plan_methods(spec, AuditSettings(), 12)
    assert "dcpdd" not in chosen
    assert "--tokenizer" in skipped["dcpdd"] and "tokenizer" in skipped["dcpdd"]
    chosen, skipped = plan_methods(spec, AuditSettings(tokenizer=str(words)), 12)
    assert "dcpdd" in chosen and "dcpdd" not in skipped
    with pytest.raises(ValueError, match="no such file or folder"):
        AuditSettings(tokenizer=str(words / "nope"))
    assert Access.TOKENIZER.value in skipped.get("dcpdd", "tokenizer")


def test_the_audit_says_why_gap_k_and_min_k_pp_do_not_run_over_an_api() -> None:
    """The white-box family runs over an API; its two methods that need sigma (the vocabulary
    std of log p) are listed as not run, with the reason."""
    chosen, skipped = plan_methods("openai:served@http://127.0.0.1:9/v1", AuditSettings(), 12)
    assert "whitebox" in chosen
    for name in ("gap_k", "min_k_pp"):
        assert "full_distribution" in skipped[name] and "whitebox runs without it" in \
            skipped[name] and "local backend" in skipped[name]
    assert not {"gap_k", "min_k_pp"} & set(plan_methods("local:smollm2", AuditSettings(),
                                                         12)[1])
