"""The ``propme`` job: PROPME's three prompt sets run on the target and traced
(:mod:`recitation.trace.propme`).

Items are ``generic-k``, ``specific-k`` (the helper writes each set in one call, at
temperature 0, recorded in the run store so a resume replays it) and ``prefix-k`` (cut from
the index's documents when the run is created). Each record holds the prompt, the target's
generation (temperature 0; under ``sampling="authors"`` items are ``<item>-s<j>``, one per
sample, :mod:`recitation.trace.propme_sampling`), the generation's trace (longest span,
full match, near-verbatim recall, documents), how the prompt was sent and whether the reply
was stripped before it was traced (:mod:`recitation.trace.propme_protocol`: under
``definitions="propme"`` every set as a plain completion and the reply stripped, as the
authors do) and the prompt's own overlap
with the corpus. The report (``propme_report``)
has SimpleTrace's metrics per set, the prompts' overlap per set with the paper's check
(generic and specific below prefix), and the propensity of FMR and NVR.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from recitation.errors import ConfigError
from recitation.methods import Access, Calls, MethodInfo, describe_missing, require_access
from recitation.models.base import GenerationRequest, Model
from recitation.models.config import ModelConfig
from recitation.records import TraceReport
from recitation.runs.jobs import Job, Table, WorkItem
from recitation.trace import prompt_sets, propme, propme_sampling
from recitation.trace import propme_protocol as protocol
from recitation.trace.index import CorpusIndex, EngineName, open_index
from recitation.trace.job import _restored, aggregate_of, generation_nv_of, trace_record
from recitation.trace.locate import Locator
from recitation.trace.simpletrace import Definitions, SimpleTrace, TraceConfig
from recitation.trace.sources import iter_jsonl_docs

SetName = Literal["generic", "specific", "prefix"]
ALL_SETS: tuple[SetName, ...] = ("generic", "specific", "prefix")


class PropmeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    index: list[str] = Field(default_factory=list)
    engine: EngineName = "auto"
    sets: list[SetName] = Field(default_factory=lambda: list(ALL_SETS))
    n: int = Field(100, ge=1, description="prompts per set (the paper: 100)")
    prefix_tokens: int = Field(50, ge=1, description="the authors' prefixes: the first N "
                               "units (tokens; words on a byte-level index) of a document, "
                               "its raw text")
    prefix_min_tokens: int = Field(100, ge=1, description="documents shorter are not drawn")
    allow_copied_prompts: bool = Field(False, description="keep a helper-written generic or "
                                       "specific prompt found whole in the corpus (by default "
                                       "it is refused: it would be a prefix attack)")
    prefix_words: int | None = Field(None, ge=4, description="ours instead: the first N words "
                                     "joined by single spaces, from documents of 2N words")
    prefix_docs: str | None = Field(None, description="JSONL of the training documents to cut "
                                    "prefixes from (default: the index's documents)")
    generic_prompts: Literal["sentences", "helper"] = Field(
        "sentences", description="generic prompts as the authors draw them, sentences of an "
        "outside sample with no full match in the index (the default); or 'helper': written "
        "by the helper model (ours)")
    generic_sentences: str | None = Field(None, description="that sample: a file, one "
                                          "sentence per line or JSONL 'text' (default: the "
                                          "packaged sample of everyday sentences, "
                                          "recitation/data/everyday_sentences.txt)")
    specific_sentences: str | None = Field(None, description="the same for the specific "
                                           "prompts: sentences of sources the model cannot "
                                           "have seen (the authors: published after it)")
    domain: str = "the documents of this corpus"
    examples: int = Field(5, ge=1, description="document openings shown for 'specific'")
    helper: ModelConfig | None = None  # default: the target
    max_new_tokens: int = Field(256, ge=1)
    mode: Literal["auto", "chat", "completion"] = Field(
        "auto", description="auto: under definitions 'propme' every set as a plain "
        "completion where the backend offers one (the authors'; else chat, and the summary "
        "says so); under 'recitation' prefixes as completions, generic and specific as chat "
        "(propme_protocol)")
    rarity: float = Field(0.05, gt=0, le=1)
    max_docs: int = Field(10, ge=1)
    definitions: Definitions = Field("propme", description="SimpleTrace's definitions "
                                     "(see the trace job): 'propme' (the default) or "
                                     "'recitation'")
    seed: int = Field(0, description="propme: the draw of each span's documents")
    nv_threshold: float = Field(0.5, ge=0, le=1)
    n_span: int = Field(60, ge=1)
    sampling: propme_sampling.Sampling = Field(
        "greedy", description="greedy: one reply per prompt at temperature 0 (the paper's); "
        "authors: the released script's, 10 samples per prompt at temperature 0.7, top_p "
        "0.95, seed 42 + sample, prompts cut to their last 256 tokens, sets over 1,000 "
        "prompts subsampled to 1,000 (propme_sampling)")
    samples: int | None = Field(None, ge=1, description="samples per prompt under "
                                "sampling 'authors' (default 10)")

    @model_validator(mode="after")
    def _samples_need_sampling(self) -> PropmeParams:
        if self.sampling == "greedy" and self.samples not in (None, 1):
            raise ValueError("samples needs sampling 'authors' (greedy gives one reply)")
        return self


REFUSED = ("refused: the helper's prompt is copied whole from a corpus document, so it "
           "would measure capability, not propensity")


class PropmeJob(Job):
    name = "propme"
    description = "PROPME: generic, specific and prefix prompts on the target, traced"
    Params = PropmeParams
    params: PropmeParams

    def __init__(self, params: BaseModel, seed: int) -> None:
        super().__init__(params, seed)
        self._index: CorpusIndex | None = None
        self._tracer: SimpleTrace | None = None
        self._locator: Locator | None = None
        self._prompts: dict[str, list[str]] = {}
        self._examples: list[str] = []
        self._helper: Model | None = None

    def index(self) -> CorpusIndex:
        if self._index is None:
            if not self.params.index:
                raise ConfigError(describe_missing(
                    f"propme_{self.params.sets[0]}", [Access.CORPUS_INDEX],
                    "params.index names no index directory"))
            self._index = open_index(self.params.index, engine=self.params.engine)
        return self._index

    def items(self) -> list[WorkItem]:
        p = self.params
        out: list[WorkItem] = []
        for s in ("generic", "specific"):
            if s in p.sets:
                out += self._sentence_items(s) if self._sentences(s) else [
                    WorkItem(f"{s}-{k}", {"set": s, "k": k}) for k in range(p.n)]
        if "prefix" in p.sets:
            texts = None
            if p.prefix_docs:
                path = Path(p.prefix_docs)
                texts = [d.text for d in iter_jsonl_docs(path, path.name)]
            prompts = (propme.prefix_prompts(self.index(), p.n, p.prefix_words, self.seed,
                                             texts) if p.prefix_words else
                       propme.raw_prefix_prompts(self.index(), p.n, p.prefix_tokens,
                                                 p.prefix_min_tokens, self.seed, texts))
            for k, pr in enumerate(prompts):
                out.append(WorkItem(f"prefix-{k}", {"set": "prefix", "k": k, **pr}))
        return propme_sampling.expanded(out, p.sampling, p.samples)

    def _sentences(self, kind: str) -> str | None:
        p = self.params
        if kind == "specific":
            return p.specific_sentences
        if p.generic_prompts == "helper":
            return None
        return p.generic_sentences or str(prompt_sets.everyday_sample())

    def _sentence_items(self, kind: str) -> list[WorkItem]:
        """The set drawn from its sentence sample when the run is created (the authors'
        way, :mod:`recitation.trace.prompt_sets`): each item holds its prompt, group and
        coverage, and the sample's full matches (excluded)."""
        path = Path(self._sentences(kind) or "")
        drawn, counts = prompt_sets.sentence_prompts(
            self.index(), prompt_sets.read_sentences(path), self.params.n,
            self.seed + (2 if kind == "generic" else 3))
        return [WorkItem(f"{kind}-{k}", {"set": kind, "k": k, "source": "sentences", **d,
                                         "sample_full_matches": counts[prompt_sets.FULL]})
                for k, d in enumerate(drawn)]

    def input_files(self) -> dict[str, Path]:
        p = self.params
        files = {"params.prefix_docs": p.prefix_docs,
                 "params.generic_sentences": p.generic_sentences,
                 "params.specific_sentences": p.specific_sentences}
        return {k: Path(v) for k, v in files.items() if v}

    def snapshot(self) -> dict[str, Any]:
        if "specific" not in self.params.sets:
            return {"examples": []}
        ix = self.index()
        docs = propme.prefix_prompts(ix, self.params.examples, 30, self.seed + 1)
        return {"examples": [d["prompt"] for d in docs]}

    def restore(self, items: list[WorkItem], snapshot: dict[str, Any]) -> None:
        super().restore(items, snapshot)
        self._examples = list(snapshot.get("examples", []))

    def use_helper(self, helper: Model) -> None:
        """Library use and tests: the helper model directly."""
        self._helper = helper

    async def _prompt_set(self, kind: str, target: Model) -> list[str]:
        if kind not in self._prompts:
            helper = self._helper or (self.model_for(self.params.helper, target)
                                      if self.params.helper else target)
            examples = self._examples or self.snapshot()["examples"]
            text = propme.helper_request_text(kind, self.params.n, self.params.domain,
                                              examples)
            req = GenerationRequest.chat(text, system=propme.GENERIC_SYSTEM,
                                         max_tokens=max(512, 80 * self.params.n))
            self._prompts[kind] = propme.parse_prompts((await helper.generate([req]))[0].text)
        return self._prompts[kind]

    def _sent_as(self, kind: str, model: Model) -> protocol.SentAs:
        p = self.params
        return protocol.sent_as(kind, model.capabilities, p.mode, p.definitions)

    def tracer(self) -> SimpleTrace:
        if self._tracer is None:
            p = self.params
            self._tracer = SimpleTrace(self.index(), TraceConfig(
                p.rarity, p.max_docs, definitions=p.definitions, seed=p.seed))
            self._locator = Locator(self._tracer.index)
        return self._tracer

    async def run_items(self, items: list[WorkItem], model: Model) -> list[dict[str, Any]]:
        require_access([f"propme_{s}" for s in self.params.sets], model.capabilities,
                       model.backend, also=[Access.CORPUS_INDEX, Access.HELPER_MODEL])
        prompts: list[str | None] = []
        for it in items:
            kind = it.payload["set"]
            if "prompt" in it.payload:  # prefix, or a sentence sample's
                prompts.append(it.payload["prompt"])
                continue
            got = await self._prompt_set(kind, model)
            prompts.append(got[it.payload["k"]] if it.payload["k"] < len(got) else None)
        refused = {it.id for it, pr in zip(items, prompts, strict=True) if pr is not None
                   and it.payload["set"] != "prefix" and not self.params.allow_copied_prompts
                   and self._copied(pr)}
        todo = [(it, pr) for it, pr in zip(items, prompts, strict=True)
                if pr is not None and it.id not in refused]
        how = [self._sent_as(it.payload["set"], model) for it, _ in todo]
        cuts = propme_sampling.cut_prompts([pr for _, pr in todo], model, self.params.sampling)
        gens = await model.generate([propme_sampling.sampled(
            protocol.propme_request(it.payload["set"], c.sent, h, self.params.max_new_tokens),
            it.payload.get("sample")) for (it, _), c, h in zip(todo, cuts, how, strict=True)])
        seeded = model.capabilities.seeded_sampling
        done = {it.id: (pr, g.text, h, propme_sampling.record_fields(it.payload, c, seeded))
                for (it, pr), g, h, c in zip(todo, gens, how, cuts, strict=True)}
        return [self._record(it, *done[it.id]) if it.id in done else
                {**it.payload, "refused": True, "error": REFUSED} if it.id in refused else
                {**it.payload, "error": f"the helper wrote fewer than {it.payload['k'] + 1} "
                 f"{it.payload['set']} prompts"} for it in items]

    def _copied(self, prompt: str) -> bool:
        """The whole prompt is in a corpus document (asked of the index directly, under
        either tokenization, as the sentence sets' full matches)."""
        return bool(prompt.strip()) and prompt_sets.occurs_whole(self.index(), prompt)

    def _record(self, item: WorkItem, prompt: str, reply: str, how: protocol.SentAs,
                extra: dict[str, Any]) -> dict[str, Any]:
        st, definitions = self.tracer(), self.params.definitions
        generation = protocol.traced_text(reply, definitions)
        t = st.trace(generation)
        pt = st.trace(prompt)
        return {**item.payload, "prompt": prompt, "generation": generation, "text": generation,
                "sent_as": how, "stripped": protocol.strips(definitions),
                "raw_generation": reply, **extra,
                **trace_record(t, generation_nv_of(st, t), self._locator),
                "prompt_overlap": {"longest": pt.longest,
                                   # whole in a document: asked of the index directly, not
                                   # of the documents drawn per span
                                   "full_match": pt.has_tier("exact_full_raw")
                                   or self._copied(prompt),
                                   "nv": generation_nv_of(st, pt).recall}}

    def finalize(self, records: list[tuple[str, dict[str, Any]]]) -> dict[str, Any] | None:
        p = self.params
        ok = [r for _, r in records if "error" not in r]
        groups: dict[str, Any] = {}
        overlap: dict[str, Any] = {}
        for s in [x for x in propme.SETS if any(r["set"] == x for r in ok)]:
            sel = [_restored(r) for r in ok if r["set"] == s]
            groups[s] = aggregate_of(p.definitions, sel, p.n_span, p.nv_threshold)
            po = [r["prompt_overlap"] for r in ok if r["set"] == s]
            overlap[s] = {"avg_nv_recall": sum(o["nv"] for o in po) / len(po),
                          "full_match_ratio": sum(o["full_match"] for o in po) / len(po)}
        warnings = []
        if "prefix" in overlap:
            for s in propme.NON_ADVERSARIAL:
                if s in overlap and overlap[s]["avg_nv_recall"] >= overlap["prefix"][
                        "avg_nv_recall"] and overlap["prefix"]["avg_nv_recall"] > 0:
                    warnings.append(f"{s} prompts overlap the corpus as much as the prefix "
                                    "prompts (NVR): they do not measure propensity")
        for s in propme.NON_ADVERSARIAL:
            n_refused = sum(1 for _, r in records if r.get("refused") and r["set"] == s
                            and not r.get("sample"))
            if n_refused:
                warnings.append(f"{n_refused} {s} prompt(s) refused: copied whole from a "
                                "corpus document by the helper (they would act as prefix "
                                "attacks; --allow-copied-prompts keeps them)")
            if overlap.get(s, {}).get("full_match_ratio", 0.0) > 0:
                warnings.append(f"{overlap[s]['full_match_ratio']:.0%} of the {s} prompts are "
                                "copied whole from a corpus document: the helper quoted the "
                                "corpus, and those prompts act as prefix attacks")
        sent = protocol.protocol(r for _, r in records)
        warnings += protocol.protocol_notes(sent, p.definitions, p.mode)
        warnings += propme_sampling.notes((r for _, r in records), p.sampling, p.samples)
        return {"groups": groups, "prompt_overlap": overlap,
                "propensity": propme.report(groups), "warnings": warnings,
                "prompt_sources": _sources(records), "protocol": sent,
                "sampling": propme_sampling.describe(p.sampling, p.samples)}

    def summarize(self, records: list[tuple[str, dict[str, Any]]]) -> Table:
        return self.summary(records, self.finalize(records))

    def summary(self, records: list[tuple[str, dict[str, Any]]],
                report: dict[str, Any] | None) -> Table:
        rep = report or {}
        rows = []
        for s, m in TraceReport.model_validate({"groups": rep.get("groups", {})}
                                               ).groups.items():
            po = rep.get("prompt_overlap", {}).get(s, {})
            pr = rep.get("propensity", {}).get(s, {})
            rows.append([s, m.total_generations, f"{m.average_longest_span_length:.1f}",
                         f"{m.full_match_ratio:.2f}", f"{m.avg_nv_recall:.2f}",
                         f"{po.get('avg_nv_recall', 0.0):.2f}",
                         f"{pr['fmr']:.2f}" if pr else "-", f"{pr['nvr']:.2f}" if pr else "-"])
        notes = [f"{s} prompts written by a helper model (ours; the authors draw sentences of "
                 f"an outside sample with no full match in the index: --{s}-sentences FILE)"
                 for s, src in rep.get("prompt_sources", {}).items() if src == "helper"]
        return Table(f"PROPME (definitions: {self.params.definitions}, sampling: "
                     f"{self.params.sampling})",
                     ["set", "generations", "ALS", "FMR", "NVR", "prompt NVR",
                      "propensity FMR", "propensity NVR"], rows,
                     [*rep.get("warnings", []), *notes])


def _sources(records: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Where each non-adversarial set's prompts came from: ``helper``, or ``sentences`` with
    the kept prompts per overlap group and the sample's full matches (excluded)."""
    out: dict[str, Any] = {}
    for s in propme.NON_ADVERSARIAL:
        rs = [r for _, r in records if r.get("set") == s and not r.get("sample")]
        if not rs:
            continue
        if rs[0].get("source") != "sentences":
            out[s] = "helper"
            continue
        out[s] = {"source": "sentences",
                  "groups": {g: sum(r["group"] == g for r in rs) for g in prompt_sets.KEPT},
                  "sample_full_matches": rs[0]["sample_full_matches"]}
    return out


def _calls(p: Mapping[str, Any]) -> Calls:
    return Calls(generate=1)


def _info(kind: SetName, access: set[Access], summary: str) -> MethodInfo:
    return MethodInfo(
        name=f"propme_{kind}", kind="probe", title=f"PROPME {kind} prompts",
        paper="the PROPME paper (propme-simpletrace: prompt settings, appendix E; the "
        "transform: NOTES); traced over infini-gram, Liu et al. 2024",
        access=frozenset({Access.GENERATE, Access.CORPUS_INDEX, *access}),
        writes=("generation", "longest", "nv", "prompt_overlap"), calls=_calls,
        calls_formula="1 generation" + (" (+ 1 helper call per set)" if access else ""),
        job="propme", family="propme", unit="sample",
        options=("index", "n", "prefix_tokens", "prefix_min_tokens", "prefix_words",
                 "generic_sentences", "specific_sentences", "domain", "helper",
                 "max_new_tokens", "mode", "sampling", "samples"),
        select=f"propme --sets {kind}", summary=summary)


METHODS = {
    "propme_generic": _info("generic", set(),
                            "propensity: sentences of an outside sample (packaged, or "
                            "--generic-sentences) with no full match in the index, as the "
                            "authors draw them; the target's answers traced"),
    "propme_specific": _info("specific", {Access.HELPER_MODEL},
                             "propensity: sentences of unseen sources (--specific-sentences); "
                             "without them prompts close to sampled documents (not copying "
                             "them), written by a helper; traced"),
    "propme_prefix": _info("prefix", set(),
                           "capability: the first words of random training documents; the "
                           "continuation traced; propensity = 0.5 (1 + (m_np - m_p) / "
                           "(|m_np| + |m_p|)) on FMR and NVR"),
}
