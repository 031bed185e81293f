"""Batched decoding and scoring loops for the local backend (torch only here).

Every tensor is made on the model's device (CPU or CUDA); a decoding step's logits are
brought to the CPU, where each row's token is picked with its own seeded generator, so a
seed draws the same way on every device. Per-position statistics over the vocabulary
(log p of each token, its rank, the mean, spread and maximum of log p) come from
:mod:`recitation.models._stats` (chunked, so their memory does not grow with vocabulary x
batch x length; compiled on a GPU)."""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any

import torch

from recitation.models._stats import (
    normalised,
    position_stats,
    rank_of,
)
from recitation.models.base import Generation, GenerationRequest, TokenScores, Usage
from recitation.models.device import split_on_oom


def _device(model: Any) -> torch.device:
    dev = getattr(model, "device", None)
    return dev if isinstance(dev, torch.device) else next(model.parameters()).device


def _first_stop(text: str, stops: tuple[str, ...]) -> int | None:
    cut = [text.find(s) for s in stops if s and s in text]
    return min(cut) if cut else None


def _pick(logits: torch.Tensor, req: GenerationRequest, gen: torch.Generator | None) -> int:
    """Next token for one row: greedy at temperature 0, else sampling with ``gen`` among the
    ``top_k`` likeliest tokens (when set), then the nucleus ``top_p``. Only the kept tokens
    are normalised and drawn from (one uniform draw, the inverse of their CDF), so a top-k
    step costs a ``topk``, not a pass over the whole vocabulary (profile in docs/benchmarks.md)."""
    if req.temperature == 0:
        return int(torch.argmax(logits).item())
    scaled, ids = logits / req.temperature, None
    if req.top_k is not None and req.top_k < scaled.shape[-1]:  # the k likeliest, sorted
        scaled, ids = _top(scaled, req.top_k)
    probs = torch.softmax(scaled.double(), dim=-1)
    if req.top_p < 1.0:  # the nucleus: tokens whose likelier ones hold less than top_p
        if ids is None:
            probs, ids = torch.sort(probs, descending=True)
        keep = torch.cumsum(probs, dim=-1) - probs < req.top_p
        probs, ids = probs[keep], ids[keep]
    t = _draw(probs, gen)
    return t if ids is None else int(ids[t].item())


def _top(scaled: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The tokens at least as likely as the k-th, likeliest first: ties at the cut are kept,
    as transformers' ``TopKLogitsWarper`` keeps them (frequent in bfloat16 logits)."""
    vals, ids = torch.topk(scaled, k)
    tied = int((scaled >= vals[-1]).sum().item())
    return torch.topk(scaled, tied) if tied > k else (vals, ids)


def _draw(probs: torch.Tensor, gen: torch.Generator | None) -> int:
    """One index drawn from ``probs`` (float64; their sum need not be 1: a nucleus is not
    renormalised) with one uniform number from ``gen`` scaled to that sum: the first index
    whose cumulative probability exceeds it."""
    cdf = torch.cumsum(probs, dim=-1)
    u = torch.rand((), generator=gen, dtype=cdf.dtype) * cdf[-1]
    return min(int(torch.searchsorted(cdf, u, right=True).item()), probs.shape[-1] - 1)


@functools.cache
def _cache_name(model_class: Any) -> str:
    """The KV cache argument of ``model_class.forward``: ``cache`` from transformers 5.x on
    (``past_key_values`` is deprecated there and goes in 5.40), ``past_key_values`` before.
    Looked up once per class, not per decoding step."""
    params = inspect.signature(model_class.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _cache_arg(model: Any, past: Any) -> dict[str, Any]:
    return {_cache_name(model.__class__): past}


def _cache_of(res: Any) -> Any:
    cache = getattr(res, "cache", None)
    return cache if cache is not None else res.past_key_values


def _forward(model: Any, ids: torch.Tensor, mask: torch.Tensor, past: Any) -> Any:
    pos = (mask.long().cumsum(-1) - 1).clamp(min=0)[:, -ids.shape[1]:]
    kwargs = dict(input_ids=ids, attention_mask=mask, position_ids=pos,
                  use_cache=True, **_cache_arg(model, past))
    try:
        return model(**kwargs, logits_to_keep=1)
    except TypeError:  # older transformers
        return model(**kwargs)


def _encode(tok: Any, texts: list[str], add_special: list[bool]) -> dict[str, torch.Tensor]:
    """Tokenize each text (with the tokenizer's special tokens, e.g. BOS, where asked) and
    left-pad the batch."""
    rows = [tok(t, add_special_tokens=a)["input_ids"] for t, a in zip(texts, add_special,
                                                                       strict=True)]
    enc: dict[str, torch.Tensor] = tok.pad({"input_ids": rows}, padding=True,
                                           return_tensors="pt")
    return enc


class _Rows:
    """The decoding state of each row of a batch: tokens and log p so far, done, why."""

    def __init__(self, n: int, requests: list[GenerationRequest]) -> None:
        self.requests = requests
        self.out_ids: list[list[int]] = [[] for _ in range(n)]
        self.out_lp: list[list[float]] = [[] for _ in range(n)]
        self.done = [r.max_tokens == 0 for r in requests]
        self.finish = ["length" if r.max_tokens == 0 else "" for r in requests]

    def step(self, logits: torch.Tensor, logp: torch.Tensor, tok: Any, stop_ids: set[int],
             gens: list[torch.Generator | None]) -> list[int]:
        """Pick each unfinished row's next token, record it, mark the rows that end; the
        tokens to feed next (padding for finished rows)."""
        nxt = []
        for i, r in enumerate(self.requests):
            if self.done[i]:
                nxt.append(tok.pad_token_id)
                continue
            t = _pick(logits[i], r, gens[i])
            nxt.append(t)
            if t in stop_ids:
                self.done[i], self.finish[i] = True, "stop"
                continue
            self.out_ids[i].append(t)
            self.out_lp[i].append(float(logp[i, t]))
            if r.stop and _first_stop(tok.decode(self.out_ids[i], skip_special_tokens=True),
                                      r.stop) is not None:
                self.done[i], self.finish[i] = True, "stop"
                continue
            if len(self.out_ids[i]) >= r.max_tokens:
                self.done[i], self.finish[i] = True, "length"
        return nxt


@torch.inference_mode()
def decode_batch(model: Any, tok: Any, stop_ids: set[int], prompts: list[str],
                 requests: list[GenerationRequest]) -> list[Generation]:
    # Plain prompts get the tokenizer's BOS (if it adds one); chat prompts are rendered by
    # the chat template, which already holds every special token.
    enc = _encode(tok, prompts, [not r.is_chat for r in requests])
    dev = _device(model)
    ids, mask = enc["input_ids"].to(dev), enc["attention_mask"].to(dev)
    n = len(prompts)
    gens: list[torch.Generator | None] = []
    for r in requests:
        g = None
        if r.temperature > 0:
            g = torch.Generator()
            g.manual_seed(r.seed if r.seed is not None else int(torch.seed() % 2**63))
        gens.append(g)
    st = _Rows(n, requests)
    past = None
    step_ids = ids
    for _ in range(max((r.max_tokens for r in requests), default=0)):
        if all(st.done):
            break
        res = _forward(model, step_ids, mask, past)
        past = _cache_of(res)
        logits = res.logits[:, -1, :].float().cpu()  # picked on the CPU: seeds draw alike
        nxt = st.step(logits, torch.log_softmax(logits, dim=-1), tok, stop_ids, gens)
        step_ids = torch.tensor(nxt, dtype=ids.dtype, device=dev).unsqueeze(1)
        mask = torch.cat([mask, torch.ones((n, 1), dtype=mask.dtype, device=dev)], dim=1)
    out_ids, out_lp, finish = st.out_ids, st.out_lp, st.finish
    results = []
    for i, r in enumerate(requests):
        text = tok.decode(out_ids[i], skip_special_tokens=True)
        cut = _first_stop(text, r.stop) if r.stop else None
        if cut is not None:
            text = text[:cut]
        results.append(Generation(
            text=text, finish_reason=finish[i] or "length",
            usage=Usage(int(enc["attention_mask"][i].sum()), len(out_ids[i])),
            token_logprobs=tuple(out_lp[i]) if r.logprobs else None,
        ))
    return results


def score_texts(model: Any, tok: Any, texts: list[str]) -> list[TokenScores]:
    """Log p of every token given its prefix, and the vocabulary mean/std of log p there
    (:func:`score_rows` of the texts' tokens)."""
    return score_rows(model, tok, _tokenize(tok, texts))


def _tokenize(tok: Any, texts: list[str]) -> list[list[int]]:
    """Each text's tokens with the tokenizer's special tokens (a BOS where the tokenizer adds
    one, e.g. Gemma; none for SmolLM2), so the first real token is scored in context; one
    call for all (a fast tokenizer encodes them in parallel)."""
    if not texts:
        return []
    rows: list[list[int]] = tok(texts, add_special_tokens=True)["input_ids"]
    return rows


def _pad_left(rows: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Token rows left-padded to the longest: ids and a boolean mask of the real tokens."""
    width = max((len(r) for r in rows), default=0)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.bool)
    for i, r in enumerate(rows):
        if r:
            ids[i, width - len(r):] = torch.tensor(r, dtype=torch.long)
            mask[i, width - len(r):] = True
    return ids, mask


@torch.inference_mode()
def score_rows(model: Any, tok: Any, rows: list[list[int]]) -> list[TokenScores]:
    """Score token rows in one batch (left-padded). The vocabulary statistics of all the
    batch's positions are computed together (:func:`position_stats`, chunked) and come to the
    CPU in one copy: nothing waits on the device row by row."""
    ids, mask = _pad_left(rows, tok.pad_token_id if tok.pad_token_id is not None else 0)
    dev = _device(model)
    pos = (mask.long().cumsum(-1) - 1).clamp(min=0)
    logits = model(input_ids=ids.to(dev), attention_mask=mask.long().to(dev),
                   position_ids=pos.to(dev)).logits
    scored = mask[:, :-1] & mask[:, 1:]  # a real position whose next token is real
    at = scored.nonzero()  # row-major: each row's positions together, in order
    cols = position_stats(logits.reshape(-1, logits.shape[-1]),
                          ids[:, 1:][scored].to(dev),
                          index=(at[:, 0] * ids.shape[1] + at[:, 1]).to(dev))
    table = torch.stack([c.double() for c in cols]).cpu().tolist()
    out, start = [], 0
    for row, n in zip(rows, scored.sum(-1).tolist(), strict=True):
        out.append(_row_scores(tok, row, [c[start:start + n] for c in table]))
        start += n
    return out


def _row_scores(tok: Any, row_ids: list[int], cols: list[list[float]]) -> TokenScores:
    """One text's scores; ``cols``: per position, the text's token's log p, the vocabulary
    mean and std of log p, the likeliest token's log p and the text's token's rank."""
    lp, mu, sigma, top, rank = cols
    return TokenScores(tokens=tuple(tok.convert_ids_to_tokens(row_ids)),
                       logprobs=tuple(lp), mean_logprob=tuple(mu),
                       std_logprob=tuple(sigma), usage=Usage(len(row_ids), 0),
                       top_logprob=tuple(top), token_ids=tuple(row_ids),
                       rank=tuple(int(r) for r in rank))


def common_prefix(rows: list[list[int]]) -> int:
    """Length of the token prefix all ``rows`` share."""
    n = min(len(r) for r in rows)
    first = rows[0]
    for k in range(n):
        if any(r[k] != first[k] for r in rows[1:]):
            return k
    return n


@torch.inference_mode()
def score_shared_prefix(model: Any, tok: Any, rows: list[list[int]], prefix: int,
                        batch_size: int) -> list[TokenScores]:
    """:func:`score_texts` for token rows that share their first ``prefix`` tokens (every row
    longer than that): the prefix is run once and its KV cache reused for each batch of
    suffixes (right-padded; causal attention keeps pads out of every real position). The
    same numbers as scoring each whole text, up to floating-point rounding. A batch of
    suffixes that runs out of memory is scored in halves."""
    dev = _device(model)
    res = model(input_ids=torch.tensor([rows[0][:prefix]], device=dev), use_cache=True)
    head = position_stats(res.logits[0, : prefix - 1],
                          torch.tensor(rows[0][1:prefix], device=dev))
    z, log_s, mu, sigma = normalised(res.logits[0, prefix - 1 :])  # [1, V]
    shared = _Prefix(res, head, z - log_s.unsqueeze(-1), (mu, sigma, -log_s))
    out: list[TokenScores] = []
    for b in range(0, len(rows), batch_size):
        out += split_on_oom(lambda chunk: _score_suffixes(model, tok, shared, chunk, prefix),
                            rows[b:b + batch_size])
    return out


@dataclass(frozen=True)
class _Prefix:
    """A shared prefix's forward pass and statistics: those of its positions but the last
    (``head``: log p, mean, std, top, rank), and its last position's log p (``last``) and
    statistics, which score each suffix's first token."""

    res: Any
    head: tuple[torch.Tensor, ...]
    last: torch.Tensor
    last_stats: tuple[torch.Tensor, ...]


def _score_suffixes(model: Any, tok: Any, pre: _Prefix, chunk: list[list[int]],
                    prefix: int) -> list[TokenScores]:
    import copy

    dev = _device(model)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    sufs = [r[prefix:] for r in chunk]
    width = max(len(s) for s in sufs)
    ids = torch.tensor([s + [pad] * (width - len(s)) for s in sufs], device=dev)
    mask = torch.cat([torch.ones((len(sufs), prefix), dtype=torch.long),
                      torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in sufs])],
                     dim=1).to(dev)
    past = copy.deepcopy(_cache_of(pre.res))
    past.batch_repeat_interleave(len(sufs))
    pos = torch.arange(prefix, prefix + width, device=dev).unsqueeze(0).expand(len(sufs), -1)
    logits = model(input_ids=ids, attention_mask=mask, position_ids=pos,
                   use_cache=True, **_cache_arg(model, past)).logits
    out = []
    for i, s in enumerate(sufs):
        rest = position_stats(logits[i, : len(s) - 1],
                              torch.tensor(s[1:], dtype=torch.long, device=dev))
        first = pre.last[0, s[0]].reshape(1)
        parts = zip((first, *pre.last_stats, rank_of(pre.last, first)), rest, strict=True)
        cols = [torch.cat([h, f, r]) for h, (f, r) in zip(pre.head, parts, strict=True)]
        out.append(_row_scores(tok, chunk[i], [c.tolist() for c in cols]))
    return out


MIN_SHARED_PREFIX = 16
"""Texts sharing at least this many leading tokens are scored with one prefix pass."""


def score_many(model: Any, tok: Any, texts: list[str], batch_size: int, *,
               token_budget: int | None = None) -> list[TokenScores]:
    """Score ``texts`` in batches of at most ``batch_size``; consecutive texts that share a
    prefix of at least :data:`MIN_SHARED_PREFIX` tokens (candidate answers after one passage)
    share one prefix pass (:func:`score_shared_prefix`). With a ``token_budget`` (a GPU's)
    the other texts are taken longest first and a batch holds at most that many tokens
    (texts x padded length). A batch that runs out of memory is scored in halves, and later
    batches are kept at most half its size."""
    rows = _tokenize(tok, texts)
    out: list[TokenScores | None] = [None] * len(texts)
    alone: list[int] = []
    for i, j, prefix in _prefix_groups(rows):
        if j - i >= 2 and prefix >= MIN_SHARED_PREFIX:
            out[i:j] = score_shared_prefix(model, tok, rows[i:j], prefix, batch_size)
        else:
            alone.extend(range(i, j))
    if token_budget is not None:
        alone.sort(key=lambda x: -len(rows[x]))
    cap = [batch_size]

    def lower(failed: int) -> None:
        cap[0] = max(1, min(cap[0], failed // 2))

    def run(idx: list[int]) -> list[TokenScores]:
        return score_rows(model, tok, [rows[x] for x in idx])

    while alone:
        take = _batch_len([len(rows[x]) for x in alone[: cap[0]]], token_budget)
        idx, alone = alone[:take], alone[take:]
        for k, s in zip(idx, split_on_oom(run, idx, lower), strict=True):
            out[k] = s
    return [s for s in out if s is not None]


def _prefix_groups(rows: list[list[int]]) -> list[tuple[int, int, int]]:
    """Runs ``rows[i:j]`` of consecutive rows sharing at least :data:`MIN_SHARED_PREFIX`
    leading tokens, with the prefix they can share (each row keeps a token after it)."""
    groups, i = [], 0
    while i < len(rows):
        j, shared = i + 1, len(rows[i])
        while j < len(rows):
            k = min(shared, common_prefix([rows[i], rows[j]]))
            if k < MIN_SHARED_PREFIX:
                break
            shared, j = k, j + 1
        groups.append((i, j, min(shared, min(len(r) for r in rows[i:j]) - 1)))
        i = j
    return groups


def _batch_len(lengths: list[int], token_budget: int | None) -> int:
    """How many of ``lengths`` (in order) go in the next batch: all of them, or under a
    ``token_budget`` as many as keep texts x longest length within it (at least one)."""
    if token_budget is None:
        return len(lengths)
    n, longest = 0, 0
    for length in lengths:
        longest = max(longest, length)
        if n and (n + 1) * longest > token_budget:
            break
        n += 1
    return n
