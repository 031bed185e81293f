"""Batched decoding and scoring loops for the local backend (torch only here)."""

from __future__ import annotations

from typing import Any

import torch

from recitation.models.base import Generation, GenerationRequest, TokenScores, Usage


def _first_stop(text: str, stops: tuple[str, ...]) -> int | None:
    cut = [text.find(s) for s in stops if s and s in text]
    return min(cut) if cut else None


def _pick(logits: torch.Tensor, req: GenerationRequest, gen: torch.Generator | None) -> int:
    """Next token for one row: greedy at temperature 0, else nucleus sampling with ``gen``."""
    if req.temperature == 0:
        return int(torch.argmax(logits).item())
    probs = torch.softmax(logits / req.temperature, dim=-1)
    if req.top_p < 1.0:
        sorted_p, order = torch.sort(probs, descending=True)
        keep = torch.cumsum(sorted_p, dim=-1) - sorted_p < req.top_p
        probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_p[keep])
    return int(torch.multinomial(probs, 1, generator=gen).item())


def _forward(model: Any, ids: torch.Tensor, mask: torch.Tensor, past: Any) -> Any:
    pos = (mask.long().cumsum(-1) - 1).clamp(min=0)[:, -ids.shape[1]:]
    kwargs = dict(input_ids=ids, attention_mask=mask, position_ids=pos,
                  past_key_values=past, use_cache=True)
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


@torch.inference_mode()
def decode_batch(model: Any, tok: Any, stop_ids: set[int], prompts: list[str],
                 requests: list[GenerationRequest]) -> list[Generation]:
    # Plain prompts get the tokenizer's BOS (if it adds one); chat prompts are rendered by
    # the chat template, which already holds every special token.
    enc = _encode(tok, prompts, [not r.is_chat for r in requests])
    ids, mask = enc["input_ids"], enc["attention_mask"]
    n = len(prompts)
    gens: list[torch.Generator | None] = []
    for r in requests:
        g = None
        if r.temperature > 0:
            g = torch.Generator()
            g.manual_seed(r.seed if r.seed is not None else int(torch.seed() % 2**63))
        gens.append(g)
    out_ids: list[list[int]] = [[] for _ in range(n)]
    out_lp: list[list[float]] = [[] for _ in range(n)]
    done = [r.max_tokens == 0 for r in requests]
    finish = ["length" if r.max_tokens == 0 else "" for r in requests]
    texts = [""] * n
    past = None
    step_ids = ids
    for _ in range(max((r.max_tokens for r in requests), default=0)):
        if all(done):
            break
        res = _forward(model, step_ids, mask, past)
        past = res.past_key_values
        logits = res.logits[:, -1, :].float()
        logp = torch.log_softmax(logits, dim=-1)
        nxt = []
        for i, r in enumerate(requests):
            if done[i]:
                nxt.append(tok.pad_token_id)
                continue
            t = _pick(logits[i], r, gens[i])
            nxt.append(t)
            if t in stop_ids:
                done[i], finish[i] = True, "stop"
                continue
            out_ids[i].append(t)
            out_lp[i].append(float(logp[i, t]))
            if r.stop:
                texts[i] = tok.decode(out_ids[i], skip_special_tokens=True)
                if _first_stop(texts[i], r.stop) is not None:
                    done[i], finish[i] = True, "stop"
                    continue
            if len(out_ids[i]) >= r.max_tokens:
                done[i], finish[i] = True, "length"
        step_ids = torch.tensor(nxt, dtype=ids.dtype).unsqueeze(1)
        mask = torch.cat([mask, torch.ones((n, 1), dtype=mask.dtype)], dim=1)
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


@torch.inference_mode()
def score_texts(model: Any, tok: Any, texts: list[str]) -> list[TokenScores]:
    """Log p of every token given its prefix, and the vocabulary mean/std of log p there.

    Texts get the tokenizer's special tokens (a BOS where the tokenizer adds one, e.g. Gemma;
    none for SmolLM2), so the first real token is scored in context. The vocabulary
    statistics are computed one row at a time to bound memory for large vocabularies."""
    enc = _encode(tok, texts, [True] * len(texts))
    ids, mask = enc["input_ids"], enc["attention_mask"]
    pos = (mask.long().cumsum(-1) - 1).clamp(min=0)
    logits = model(input_ids=ids, attention_mask=mask, position_ids=pos).logits
    out = []
    for i in range(len(texts)):
        k = int(mask[i].sum())
        row_ids = ids[i, ids.shape[1] - k:]  # left padding: the real tokens are the last k
        logp = torch.log_softmax(logits[i, ids.shape[1] - k : -1].float(), dim=-1)
        tok_lp = logp.gather(-1, row_ids[1:].unsqueeze(-1)).squeeze(-1)
        p = logp.exp()
        mu = (p * logp).sum(-1)
        sigma = ((p * logp.pow(2)).sum(-1) - mu.pow(2)).clamp(min=0).sqrt()
        del p, logp
        out.append(TokenScores(
            tokens=tuple(tok.convert_ids_to_tokens(row_ids.tolist())),
            logprobs=tuple(tok_lp.tolist()),
            mean_logprob=tuple(mu.tolist()),
            std_logprob=tuple(sigma.tolist()),
            usage=Usage(k, 0),
        ))
    return out
