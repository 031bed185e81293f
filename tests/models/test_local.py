"""The local backend with the real embedded SmolLM2-135M-Instruct model."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from recitation.errors import ConfigError
from recitation.models.base import Generation, GenerationRequest, Message
from recitation.models.local import LocalModel, resolve_model_path, shared_weights

pytestmark = pytest.mark.model

PROMPTS = ["In the beginning God created", "The LORD is my shepherd; I shall",
           "Call me Ishmael. Some years ago, never mind how long precisely,"]


async def test_greedy_matches_transformers_generate(local_model: LocalModel) -> None:
    import torch

    loaded = local_model.load()
    ours = await local_model.generate([GenerationRequest(prompt=p, max_tokens=12)
                                       for p in PROMPTS])
    for p, g in zip(PROMPTS, ours, strict=True):
        ids = loaded.tokenizer(p, return_tensors="pt", add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            ref = loaded.model.generate(ids, max_new_tokens=12, do_sample=False,
                                        attention_mask=torch.ones_like(ids),
                                        pad_token_id=loaded.tokenizer.pad_token_id)
        ref_text = loaded.tokenizer.decode(ref[0, ids.shape[1]:], skip_special_tokens=True)
        assert g.text == ref_text
        assert g.usage.input_tokens == ids.shape[1]


async def test_batch_equals_one_at_a_time(local_model: LocalModel) -> None:
    reqs = [GenerationRequest(prompt=p, max_tokens=10) for p in PROMPTS]
    batched = await local_model.generate(reqs)
    single = [(await local_model.generate([r]))[0] for r in reqs]
    assert [g.text for g in batched] == [g.text for g in single]


async def test_concurrent_clients_are_decoded_in_one_batch(local_model: LocalModel) -> None:
    """Two clients run together (an audit's two RECAP runs): their calls meet in one decoded
    batch, and each gets the texts it gets alone."""
    from recitation.models.rendezvous import run_together

    chat = [GenerationRequest(messages=(Message("user", p),), max_tokens=8) for p in PROMPTS]
    plain = [GenerationRequest(prompt=p, max_tokens=8) for p in PROMPTS]
    sizes: list[int] = []
    decode = local_model.generate_sync

    def counted(reqs: list[GenerationRequest]) -> list[Generation]:
        sizes.append(len(reqs))
        return decode(reqs)

    local_model.generate_sync = counted  # type: ignore[method-assign]
    try:
        (a, b), table = await run_together([local_model.generate(chat[:2]),
                                            local_model.generate(plain)])
    finally:
        del local_model.generate_sync
    assert sizes == [5] and table.batches == [[2, 3]]
    assert [g.text for g in a] == [g.text for g in await local_model.generate(chat[:2])]
    assert [g.text for g in b] == [g.text for g in await local_model.generate(plain)]


async def test_seeded_sampling_is_reproducible(local_model: LocalModel) -> None:
    r = GenerationRequest(prompt=PROMPTS[0], max_tokens=12, temperature=1.0, seed=7)
    a = (await local_model.generate([r]))[0].text
    b = (await local_model.generate([GenerationRequest(prompt=PROMPTS[1], max_tokens=5), r]))[1]
    c = (await local_model.generate([GenerationRequest(prompt=PROMPTS[0], max_tokens=12,
                                                        temperature=1.0, seed=8)]))[0].text
    assert a == b.text  # same seed, same text, whatever else is in the batch
    assert a != c


async def test_stop_sequences_and_max_tokens(local_model: LocalModel) -> None:
    free = (await local_model.generate([GenerationRequest(prompt=PROMPTS[2], max_tokens=20)]))[0]
    assert free.finish_reason == "length" and free.usage.output_tokens == 20
    word = free.text.split()[2]
    stopped = (await local_model.generate([GenerationRequest(
        prompt=PROMPTS[2], max_tokens=20, stop=(word,))]))[0]
    assert word not in stopped.text and free.text.startswith(stopped.text)
    assert stopped.finish_reason == "stop"


async def test_chat_uses_the_chat_template(local_model: LocalModel) -> None:
    req = GenerationRequest.chat("What is the capital of France? Answer in one word.",
                                 max_tokens=10)
    assert "<|im_start|>user" in local_model.render_prompt(req)
    out = (await local_model.generate([req]))[0]
    assert "Paris" in out.text


async def test_score_matches_direct_logits(local_model: LocalModel) -> None:
    import torch

    loaded = local_model.load()
    texts = ["In the beginning God created the heaven and the earth.", "Jesus wept."]
    scores = await local_model.score(texts)  # batched with left padding
    for text, s in zip(texts, scores, strict=True):
        ids = loaded.tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logp = torch.log_softmax(loaded.model(ids).logits[0, :-1].double(), -1)
        direct = logp.gather(-1, ids[0, 1:, None]).squeeze(-1)
        assert len(s.logprobs) == ids.shape[1] - 1 == len(s.tokens) - 1
        assert max(abs(a - b) for a, b in zip(s.logprobs, direct.tolist(), strict=True)) < 1e-3
        p = logp.exp()
        mu = (p * logp).sum(-1)
        sd = ((p * (logp - mu[:, None]) ** 2).sum(-1)).sqrt()
        mus, sds = s.mean_logprob or (), s.std_logprob or ()
        assert max(abs(a - b) for a, b in zip(mus, mu.tolist(), strict=True)) < 1e-3
        assert max(abs(a - b) for a, b in zip(sds, sd.tolist(), strict=True)) < 1e-3
        assert all(math.isfinite(x) for x in s.logprobs)
        assert s.token_ids == tuple(ids[0].tolist())
        order = torch.argsort(logp, dim=-1, descending=True)  # ranks by sorting, 1-based
        by_sort = [int((order[i] == t).nonzero()) + 1 for i, t in enumerate(ids[0, 1:])]
        assert s.rank is not None and sum(a != b for a, b in zip(s.rank, by_sort,
                                                               strict=True)) <= 1


async def test_candidates_after_one_passage_share_a_prefix_pass(
        local_model: LocalModel) -> None:
    """Texts that differ only after a long shared prefix (a probe's candidate names) are
    scored with one prefix pass and a reused KV cache: the same numbers as each whole text
    scored directly, and the shared path is actually taken."""
    import torch

    from recitation.models import _decode

    loaded = local_model.load()
    tok = loaded.tokenizer
    passage = ("In the beginning God created the heaven and the earth. And the earth was "
               "without form, and void; and darkness was upon the face of the deep. Speaker: ")
    texts = [passage + n for n in ("Moses", "Aaron the Levite", "Noah", "Abraham of Ur")]
    texts += ["Jesus wept.", passage + "Eve"]
    rows = [tok(t)["input_ids"] for t in texts]
    assert _decode.common_prefix(rows[:4]) >= _decode.MIN_SHARED_PREFIX
    calls: list[int] = []
    real = _decode.score_shared_prefix

    def spy(*a, **k):  # type: ignore[no-untyped-def]
        calls.append(len(a[2]))
        return real(*a, **k)

    _decode.score_shared_prefix = spy  # type: ignore[assignment]
    try:
        local_model.score_batch_size = 3  # suffix batches of 3 and 1 in the first group
        scores = await local_model.score(texts)
    finally:
        _decode.score_shared_prefix = real  # type: ignore[assignment]
        local_model.score_batch_size = 8
    assert calls == [4]  # the first four share one pass; "Jesus wept." breaks the run
    for text, s in zip(texts, scores, strict=True):
        ids = tok(text, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            logp = torch.log_softmax(loaded.model(ids).logits[0, :-1].double(), -1)
        direct = logp.gather(-1, ids[0, 1:, None]).squeeze(-1).tolist()
        assert len(s.logprobs) == len(direct) and len(s.tokens) == ids.shape[1]
        assert max(abs(a - b) for a, b in zip(s.logprobs, direct, strict=True)) < 1e-3
        mu = (logp.exp() * logp).sum(-1).tolist()
        assert max(abs(a - b) for a, b in zip(s.mean_logprob or (), mu, strict=True)) < 1e-3
        whole = (await local_model.score([text]))[0]  # one text: no shared prefix
        assert s.token_ids == whole.token_ids == tuple(ids[0].tolist())
        assert s.rank is not None and whole.rank is not None
        assert sum(a != b for a, b in zip(s.rank, whole.rank, strict=True)) <= 1


async def test_logprobs_of_generated_tokens(local_model: LocalModel) -> None:
    g = (await local_model.generate([GenerationRequest(prompt=PROMPTS[0], max_tokens=5,
                                                       logprobs=True)]))[0]
    assert g.token_logprobs is not None and len(g.token_logprobs) == 5
    assert all(lp <= 0 for lp in g.token_logprobs)


def test_converted_weights_are_cached(local_model: LocalModel) -> None:
    m = LocalModel()
    m.load()
    assert m.loaded_from_cache is True  # the session fixture converted it already


def test_weights_are_shared_in_a_process_and_private_for_training(
        local_model: LocalModel) -> None:
    """Two models of the same weights use one copy in memory (an audit's runs load it once);
    a private copy (fine-tuning) is another object, and changing it leaves the shared copy's
    scores as they were."""
    import torch

    # read through the process-wide table now: the session's model object may hold a copy
    # the table has since dropped (it keeps the SHARED_MAX most recently used; a test
    # before this one in the same worker may have loaded that many others)
    shared = LocalModel().load()
    assert LocalModel().load() is shared
    assert len(shared_weights()) >= 1
    before = LocalModel().score_sync([PROMPTS[0]])[0].logprobs
    private = LocalModel().load_private()
    assert private.model is not shared.model
    with torch.no_grad():
        for p in private.model.parameters():
            p.add_(0.5)  # a wrecked private copy
    assert LocalModel().score_sync([PROMPTS[0]])[0].logprobs == before


def test_bad_model_spec(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="neither a transformers directory"):
        resolve_model_path(str(tmp_path / "nope"))


@pytest.mark.model
def test_the_tokenizer_alone_loads_no_weights_and_tokenizes_as_the_model() -> None:
    """``tokenizer()`` before any call reads the tokenizer alone (a DC-PDD count of an audit
    answered from the cache loads no weights); it tokenizes exactly as the loaded model's."""
    from recitation.models.local import LocalModel

    alone = LocalModel("smollm2")
    tok = alone.tokenizer()
    assert alone._loaded is None  # no weights read
    loaded = LocalModel("smollm2")
    text = "In the beginning God created the heaven and the earth. Émile's naïve café!"
    ref = loaded.load().tokenizer
    assert tok.tokens(text) == ref.convert_ids_to_tokens(ref.encode(text,
                                                                     add_special_tokens=False))
    assert tok.fingerprint() == loaded.tokenizer().fingerprint()  # type: ignore[attr-defined]


def test_bfloat16_weights_score_close_to_float32(local_model: LocalModel) -> None:
    """``dtype="bfloat16"``: its own copy of the weights in bfloat16, and an identity of its
    own (its answers never answer for float32's in a cache); the float32 model is the
    reference: per token within a few hundredths of a nat on average (measured 0.04-0.07),
    each text's mean log-probability within 0.1 (measured 0.002-0.066, the largest on a
    4-token text), the texts in the same order."""
    import torch

    texts = [*PROMPTS, "It was the best of times, it was the worst of times, it was the age of",
             "The quick brown fox jumps over the lazy dog while the cat sleeps in June."]
    bf = LocalModel(dtype="bfloat16")
    assert bf.load() is not local_model.load()
    assert next(bf.load().model.parameters()).dtype == torch.bfloat16
    assert bf.identity() == local_model.identity() | {"dtype": "bfloat16"}
    ref, got = local_model.score_sync(texts), bf.score_sync(texts)
    means = []
    for r, g in zip(ref, got, strict=True):
        assert len(r.logprobs) == len(g.logprobs)
        diffs = [abs(a - b) for a, b in zip(r.logprobs, g.logprobs, strict=True)]
        assert sum(diffs) / len(diffs) < 0.15 and max(diffs) < 1.0
        means.append((sum(r.logprobs) / len(r.logprobs), sum(g.logprobs) / len(g.logprobs)))
    assert all(abs(a - b) < 0.1 for a, b in means)
    assert sorted(range(len(means)), key=lambda i: means[i][0]) == sorted(
        range(len(means)), key=lambda i: means[i][1])
    with pytest.raises(ConfigError, match="float16.*float32, bfloat16"):
        LocalModel(dtype="float16")
