"""PROPME's sampling (issue 47, D6): greedy by default, one reply per prompt (the paper's);
``sampling="authors"`` as the authors' released script runs (PropMe
``run_generations_all.sh`` -> ``generate_vllm.py``): 10 samples per prompt at temperature
0.7, top_p 0.95, seed 42 (vLLM seeds the j-th of n samples 42 + j), prompts cut to their last
256 tokens, sets over 1,000 prompts subsampled to 1,000 (``subsample_prompt_sets.py``).
Scripted models for the control flow, a byte-level BPE built here with ``tokenizers`` for the
cut, the embedded SmolLM2 for samples that differ and reproduce."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest
from test_propme_protocol import CHAPTERS, kjv_index

from recitation.errors import ConfigError
from recitation.models.base import Capabilities, GenerationRequest, Model
from recitation.models.scripted import ScriptedModel
from recitation.models.tokenizer import Tokenizer
from recitation.runs.jobs import WorkItem, make_job
from recitation.trace.propme_sampling import cut_prompts, expanded


@pytest.fixture(scope="module")
def kjv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return kjv_index(tmp_path_factory.mktemp("sampling"))


def run(kjv: tuple[Path, Path], target: Model, **params: Any
        ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    idx, specific = kjv
    job = make_job("propme", {"index": [str(idx)], "engine": "numpy", "n": 2,
                              "specific_sentences": str(specific), **params}, 0)
    items = job.items()
    records = asyncio.run(job.run_items(items, target))
    assert not [r for r in records if "error" in r]
    report = job.finalize([(it.id, r) for it, r in zip(items, records, strict=True)])
    assert report is not None
    return records, report


def seeded_reply(req: GenerationRequest) -> str:
    return f"a reply drawn with seed {req.seed}"


def test_greedy_is_the_default_one_request_per_prompt(kjv: tuple[Path, Path]) -> None:
    target = ScriptedModel(seeded_reply)
    records, report = run(kjv, target)
    assert len(target.requests) == len(records) == 6
    assert all((q.temperature, q.top_p, q.seed) == (0.0, 1.0, None) for q in target.requests)
    assert not [r for r in records if "sample" in r or "sampling" in r]
    assert report["sampling"] == {"name": "greedy", "temperature": 0.0, "samples": 1}
    assert not [w for w in report["warnings"] if w.startswith("sampling")]


def test_authors_sampling_sends_ten_seeded_samples_per_prompt(kjv: tuple[Path, Path]) -> None:
    target = ScriptedModel(seeded_reply)
    records, report = run(kjv, target, sampling="authors")
    assert len(target.requests) == len(records) == 3 * 2 * 10
    assert all((q.temperature, q.top_p) == (0.7, 0.95) for q in target.requests)
    by_prompt: dict[str, list[GenerationRequest]] = {}
    for q in target.requests:
        by_prompt.setdefault(q.prompt or "", []).append(q)
    assert len(by_prompt) == 6
    for qs in by_prompt.values():  # seeds 42 + j, as vLLM seeds the j-th of n samples
        assert sorted(q.seed or 0 for q in qs) == list(range(42, 52))
    for r in records:  # each sample traced as its own generation, with its parameters
        assert r["generation"] == f"a reply drawn with seed {42 + r['sample']}"
        assert r["sampling"] == {"name": "authors", "temperature": 0.7, "top_p": 0.95,
                                 "seed": 42 + r["sample"], "max_prompt_tokens": 256,
                                 "seeded": True}
        assert r["prompt_tokens"] is None and r["prompt_cut"] is False
    assert report["protocol"]["generic"] == {"completion": 2, "chat": 0, "stripped": 2}
    # identical texts count once under the authors' metrics (propme_aggregate dedups by
    # text): both prefixes got the same 10 replies
    assert report["groups"]["prefix"]["total_generations"] == 10
    assert report["sampling"]["samples"] == 10
    notes = report["warnings"]
    assert any(w.startswith("sampling: the authors'") for w in notes)
    # the scripted model has no tokenizer: the prompts go whole, and the summary says so
    assert any(w.startswith("6 prompt(s) not cut to their last 256 tokens") for w in notes)


def test_samples_override_and_greedy_refuses_it(kjv: tuple[Path, Path]) -> None:
    target = ScriptedModel(seeded_reply)
    records, _ = run(kjv, target, sets=["generic"], sampling="authors", samples=3)
    assert sorted(r["sample"] for r in records) == [0, 0, 1, 1, 2, 2]
    assert {q.seed for q in target.requests} == {42, 43, 44}
    with pytest.raises((ConfigError, ValueError), match="samples needs sampling"):
        make_job("propme", {"index": ["x"], "samples": 3}, 0)


def test_sets_over_1000_prompts_are_subsampled_as_the_authors_do() -> None:
    items = ([WorkItem(f"generic-{k}", {"set": "generic", "k": k}) for k in range(1500)]
             + [WorkItem(f"prefix-{k}", {"set": "prefix", "k": k}) for k in range(1000)])
    out = expanded(items, "authors", 1)
    generic = [it.payload["k"] for it in out if it.payload["set"] == "generic"]
    # subsample_prompt_sets.py: sorted(random.Random(42).sample(range(n), size))
    assert generic == sorted(random.Random(42).sample(range(1500), 1000))
    assert all(it.payload["set_size"] == 1500 for it in out if it.payload["set"] == "generic")
    assert [it.payload["k"] for it in out if it.payload["set"] == "prefix"] == list(range(1000))
    assert not [it for it in out if it.payload["set"] == "prefix" and "set_size" in it.payload]
    assert expanded(items, "authors", 1) == out  # seeded
    assert expanded(items, "greedy", None) is items


def _byte_level_bpe(require: Any) -> Tokenizer:
    transformers = require.module("transformers", "pip install -e '.[local]'")
    tk = require.module("tokenizers", "pip install -e '.[local]'")
    from recitation.models.tokenizer import HFTokenizer

    tok = tk.Tokenizer(tk.models.BPE())
    tok.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tk.decoders.ByteLevel()
    tok.train_from_iterator([d.text for d in CHAPTERS[:3]], tk.trainers.BpeTrainer(
        vocab_size=400, initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet()))
    return HFTokenizer(transformers.PreTrainedTokenizerFast(tokenizer_object=tok))


def test_prompts_longer_than_256_tokens_are_cut_to_their_last_256(require: Any) -> None:
    tok = _byte_level_bpe(require)

    class WithTokenizer(ScriptedModel):
        capabilities = Capabilities(tokenizer=True)

        def tokenizer(self) -> Tokenizer:
            return tok

    long_prompt, short = CHAPTERS[3].text[:4000], "In the beginning God created"
    ids = tok.encode(long_prompt)
    assert len(ids) > 256
    model = WithTokenizer(seeded_reply)
    cut, whole = cut_prompts([long_prompt, short], model, "authors")
    assert cut.cut and cut.tokens == len(ids) and cut.sent == tok.decode(ids[-256:])
    assert long_prompt.endswith(cut.sent) and len(tok.encode(cut.sent)) == 256
    assert (whole.sent, whole.cut, whole.tokens) == (short, False, len(tok.encode(short)))
    # greedy leaves every prompt as it is, whatever the tokenizer
    assert [c.sent for c in cut_prompts([long_prompt], model, "greedy")] == [long_prompt]
    # no tokenizer: sent whole, length unknown
    assert cut_prompts([long_prompt], ScriptedModel(), "authors")[0].tokens is None


def test_a_backend_without_seeds_is_said_not_to_reproduce(kjv: tuple[Path, Path]) -> None:
    class Unseeded(ScriptedModel):
        capabilities = Capabilities(seeded_sampling=False, reproducible=False)

    records, report = run(kjv, Unseeded(seeded_reply), sets=["generic"], sampling="authors",
                          samples=2)
    assert all(r["sampling"]["seeded"] is False for r in records)
    assert any("takes no seed" in w for w in report["warnings"])


@pytest.mark.model
def test_the_embedded_model_samples_differ_and_reproduce(kjv: tuple[Path, Path],
                                                          local_model: Model) -> None:
    """SmolLM2 (whose tokenizer is known: prompts measured, none over 256 tokens): two
    prefixes, two samples each, 8 tokens; the samples of a prompt differ and a second run
    gives the same texts (each row's generator seeded 42 + sample)."""
    def once() -> list[dict[str, Any]]:
        records, report = run(kjv, local_model, sets=["prefix"], sampling="authors",
                              samples=2, max_new_tokens=8)
        assert not [w for w in report["warnings"] if "not cut" in w]
        return records

    first, again = once(), once()
    assert all(r["prompt_tokens"] and not r["prompt_cut"] for r in first)
    texts = [(r["prompt"], r["sample"], r["raw_generation"]) for r in first]
    assert texts == [(r["prompt"], r["sample"], r["raw_generation"]) for r in again]
    by_prompt: dict[str, set[str]] = {}
    for prompt, _, text in texts:
        by_prompt.setdefault(prompt, set()).add(text)
    assert len(by_prompt) == 2 and any(len(s) == 2 for s in by_prompt.values())
