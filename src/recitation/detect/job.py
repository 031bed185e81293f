"""The ``detect`` job: PEARL and white-box membership scores for audited samples and
controls, stored per sample; calibration and verdicts over the stored records.

One work item per sample (members first, then controls). A chunk of items is processed with
one batched ``generate`` call (every sample x perturbation x intensity x output of the chunk)
and one batched ``score`` call (the texts and every score-based family's companion texts, e.g.
their lower-cased forms); a reference model, when configured, gets one more ``score`` call;
ReCaLL one more (each text after its non-member prefix); DC-PDD reuses the plain scores and
counts a reference corpus with the target's tokenizer once per job.

The score-based families (``whitebox``, ``recall``, ``dcpdd``) are plug-ins
(:mod:`recitation.detect.scoring`) found through the method registry
(:mod:`recitation.methods`): this job names none of them. Every call goes through the run's
:class:`~recitation.models.managed.ManagedModel` (cache, run store, retries, budget): the
reference backend comes from the run context (``RunContext.model_for``: a ManagedModel
sharing the run's store, cache and budget).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from recitation import methods
from recitation.detect.camia import check_signs
from recitation.detect.dcpdd import DEFAULT_A as DEFAULT_DCPDD_A
from recitation.detect.dcpdd import DEFAULT_CORPUS as DEFAULT_DCPDD_CORPUS
from recitation.detect.ezmia import MAX_TOKENS as EZMIA_MAX_TOKENS
from recitation.detect.logprob_gate import WITHHELD, LogprobGate
from recitation.detect.neighbour import DEFAULT_NEIGHBOURS
from recitation.detect.pearl import (
    MIN_REFERENCE_WORDS,
    PearlSettings,
    RequestPool,
    SamplePlan,
    SensitivityMode,
    TaskInput,
    make_task,
    plan_sample,
    score_plan,
    short_reference,
)
from recitation.detect.perturb import (
    ALL_PERTURBATIONS,
    BitflipScale,
    Perturb,
    Tokenizer,
    get_perturbation,
)
from recitation.detect.recall import DEFAULT_SHOTS as DEFAULT_RECALL_SHOTS
from recitation.detect.samia import DEFAULT_SAMPLES as DEFAULT_SAMIA_SAMPLES
from recitation.detect.samia import SamiaWords
from recitation.detect.samples import Sample, load_samples, source_file
from recitation.detect.scoring import SampleResult, ScoringDetector
from recitation.errors import ConfigError
from recitation.method_options import check_options, validate
from recitation.methods import Access
from recitation.metrics.ncd import Compressor
from recitation.models.base import Model, TokenScores
from recitation.models.tokenizer import Tokenizer as ModelTokenizer
from recitation.models.tokenizer_file import FileTokenizer, tokenizer_json
from recitation.records import DetectRecord, ScoreRecord
from recitation.runs.config import ModelConfig, ResolvedPath, TokenizerPath
from recitation.runs.jobs import CallEstimate, Job, Table, WorkItem

log = logging.getLogger(__name__)

DETECTORS: tuple[str, ...] = tuple(methods.families("detector"))  # from the registry
DEFAULT_DETECTORS: tuple[str, ...] = ("pearl", "whitebox")
GENERATING: frozenset[str] = frozenset({"pearl"})  # run by the job; the others are plug-ins
BitflipTokenizer = Literal["auto", "o200k", "target"]


class DetectParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    members: list[str] = Field(default_factory=lambda: ["kjv:famous-long"])
    controls: list[str] = Field(default_factory=lambda: ["builtin:kjv-devotional-long"])
    limit: int | None = Field(None, ge=1)  # samples per source
    passage_words: int = Field(250, ge=8)  # book sources; PEARL samples >= 250 words
    detectors: list[str] = Field(default_factory=lambda: list(DEFAULT_DETECTORS))
    task: Literal["auto", "completion", "summarization"] = "auto"
    mode: Literal["completion", "chat"] = "completion"
    perturbations: list[str] = Field(default_factory=lambda: ["bitflip", "synonym"])
    max_intensity: int = Field(5, ge=1, le=100)
    outputs: int = Field(10, ge=1)
    temperature: float = Field(0.3, ge=0)  # the papers' setting; 0 = greedy
    top_p: float = Field(1.0, gt=0, le=1)
    max_new_tokens: int | None = Field(None, ge=1)
    gfd_tau: float = Field(0.2, ge=0)
    bitflip_scale: BitflipScale = "published"  # "utf8-percent": k% of the UTF-8 bits
    bitflip_tokenizer: BitflipTokenizer = "auto"  # auto: o200k if installed, else target's
    sensitivity: SensitivityMode = "absolute"  # "signed": largest drop only
    ncd: Compressor = "zlib"  # as textdistance.zlib_ncd; "zlib9": our earlier NCD
    reference_model: ModelConfig | None = None
    reference_prefix: str = ""  # e.g. "<bos>" for reference models that need a BOS token
    min_k_ngram: int = Field(1, ge=1)  # > 1: also Min-K% over n-token windows
    recall_shots: int = Field(DEFAULT_RECALL_SHOTS, ge=1)  # controls in ReCaLL's prefix
    dcpdd_corpus: str = DEFAULT_DCPDD_CORPUS  # "kjv" or a .txt / .jsonl path
    dcpdd_a: float = Field(DEFAULT_DCPDD_A, gt=0)  # DC-PDD's upper bound per token
    # the target's tokenizer where its backend exposes none (an API): a folder holding
    # tokenizer.json, or that file (models/tokenizer_file.py); checked against the server
    tokenizer: TokenizerPath | None = None
    samia_samples: int = Field(DEFAULT_SAMIA_SAMPLES, ge=1)  # SaMIA's continuations per sample
    samia_max_tokens: int | None = Field(None, ge=1)  # None: 1,024 less the prompt (theirs)
    samia_words: SamiaWords = "authors"  # theirs: split(" "); "whitespace": str.split()
    neighbours: int = Field(DEFAULT_NEIGHBOURS, ge=1)  # the neighbourhood attack's (MIMIR's)
    ezmia_max_tokens: int = Field(EZMIA_MAX_TOKENS, ge=3)  # EZ-MIA's sequence_length (theirs)
    ezmia_saturate: bool = False  # ours: the best-known texts score highest, not 0.0
    camia_signs: dict[str, int] | None = None  # per key (theirs); None: DIRECTIONS per group
    target_fpr: float = Field(0.05, gt=0, lt=1)
    # conformal: out-of-sample FPR <= target (default); empirical: the former in-sample one
    calibration: Literal["conformal", "empirical"] = "conformal"
    labelled: bool = True  # the audited samples are known members: report AUC / TPR
    # the log-probability integrity check runs and is stored, but a failure withholds
    # nothing: the score-based detectors use the model's log-probabilities anyway
    trust_logprobs: bool = False
    n_bootstrap: int = Field(1000, ge=0)
    # a token-signal store (recitation.signals): texts' scores read from it, those it lacks
    # scored once and added; None: scored through the model (and its response cache)
    signals: ResolvedPath | None = None
    # a family's own typed options (MethodInfo.option_model): family -> {key: value}, as
    # --detector-option FAMILY.key=value gives them (recitation/method_options.py)
    detector_options: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @field_validator("detector_options")
    @classmethod
    def _family_options(cls, v: dict[str, dict[str, Any]], info: ValidationInfo
                        ) -> dict[str, dict[str, Any]]:
        try:
            return check_options("detector", v, info.data.get("detectors"))
        except ConfigError as e:
            raise ValueError(str(e)) from None

    @field_validator("camia_signs")
    @classmethod
    def _camia_signs(cls, v: dict[str, int] | None) -> dict[str, int] | None:
        try:
            return None if v is None else check_signs(v)
        except ConfigError as e:
            raise ValueError(str(e)) from None

    @field_validator("detectors")
    @classmethod
    def _registered(cls, v: list[str]) -> list[str]:
        for family in v:
            try:
                methods.check_family("detector", family, "detectors")
            except ConfigError as e:
                raise ValueError(str(e)) from None
        return v

    @field_validator("perturbations")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        bad = [p for p in v if p not in ALL_PERTURBATIONS]
        if bad:
            raise ValueError(f"unknown perturbation(s) {bad}; "
                             f"choose from {list(ALL_PERTURBATIONS)}")
        return v

    def pearl_settings(self) -> PearlSettings:
        return PearlSettings(tuple(self.perturbations), self.max_intensity, self.outputs,
                             self.temperature, self.top_p, self.max_new_tokens, self.gfd_tau,
                             self.mode, self.sensitivity, self.ncd)


class DetectJob(Job):
    name = "detect"
    description = "PEARL perturbation sensitivity and white-box membership scores, calibrated"
    Params = DetectParams
    params: DetectParams
    _reference: Model | None = None
    _plugins: dict[str, ScoringDetector] | None = None
    _signals: Any = None  # the run's token-signal store (recitation.signals), once opened
    _named_tokenizer: FileTokenizer | None = None  # params.tokenizer, once read
    _gate: LogprobGate | None = None  # the log-probability integrity check's reports

    def samples(self) -> list[Sample]:
        if self.stored_items is not None:  # restored from a run: its stored samples
            return [Sample.from_dict(it.payload) for it in self.stored_items]
        p = self.params
        out: list[Sample] = []
        for spec in p.members:
            out += load_samples(spec, "member", limit=p.limit, passage_words=p.passage_words)
        for spec in p.controls:
            out += load_samples(spec, "control", limit=p.limit, passage_words=p.passage_words)
        return out

    def items(self) -> list[WorkItem]:
        return [WorkItem(f"{s.label}:{s.id}", s.to_dict()) for s in self.samples()]

    def estimate(self) -> CallEstimate:
        """PEARL's generations and the detectors' scorings (:func:`report.count_calls`), an
        upper bound: a text asked twice is answered once, and ReCaLL does not score the
        controls in its prefix; reference-model scorings go to the reference model, not
        counted here."""
        from recitation.detect.results import count_calls

        c = count_calls(self)
        return CallEstimate(c["generate_calls"] + c["score_calls"], c["input_tokens"],
                            c["output_tokens"], upper_bound=True)

    def input_files(self) -> dict[str, Path]:
        """The sample files (and a DC-PDD corpus file) the run reads, for its fingerprint."""
        p, out = self.params, {}
        for role in ("members", "controls"):
            for i, spec in enumerate(getattr(p, role)):
                if (path := source_file(spec)) is not None:
                    out[f"params.{role}[{i}]"] = path
        if "dcpdd" in p.detectors and p.dcpdd_corpus != DEFAULT_DCPDD_CORPUS:
            out["params.dcpdd_corpus"] = Path(p.dcpdd_corpus).expanduser()
        if p.tokenizer:
            out["params.tokenizer"] = tokenizer_json(p.tokenizer)
        return out

    def target_tokenizer(self, model: Model) -> ModelTokenizer | None:
        """The target's tokenizer: its backend's own, else the one ``params.tokenizer``
        names (read once per job), else None."""
        if (own := model.tokenizer()) is not None or not self.params.tokenizer:
            return own
        if self._named_tokenizer is None:
            self._named_tokenizer = FileTokenizer(self.params.tokenizer)
        return self._named_tokenizer

    def task_input(self, s: Sample) -> TaskInput:
        task = s.task if self.params.task == "auto" else self.params.task
        return make_task(task, s.text, prompt=s.prompt, reference=s.reference)

    def bitflip_tokenizer(self, model: Model | None) -> tuple[Tokenizer | None, str]:
        """The tokenizer of the published bit flip and a description of it: o200k (the
        authors' GPT-4o ids) when installed, else the target's own (``auto``)."""
        from recitation.detect.o200k import load_o200k

        if self.params.bitflip_scale != "published":
            return None, "none (utf8-percent: UTF-8 bits)"
        want = self.params.bitflip_tokenizer
        if want in ("auto", "o200k") and (enc := load_o200k()) is not None:
            return enc, enc.source
        if want == "o200k":
            raise ConfigError("bitflip_tokenizer 'o200k' needs an offline o200k encoding: "
                              "pip install rs-bpe (or recitation[detect])")
        tok = self.target_tokenizer(model) if model is not None else None
        if tok is None and model is not None:
            raise ConfigError(f"the published bit flip needs token ids: backend "
                              f"'{model.backend}' exposes no tokenizer and no o200k encoding "
                              "is installed (pip install rs-bpe), or use bitflip_scale "
                              "'utf8-percent'")
        return tok, "target model's tokenizer" if tok is not None else "unknown (no model)"

    def perturbations(self, model: Model | None) -> dict[str, Perturb]:
        """The perturbation functions; without a model (call estimates) a token-level bit
        flip that needs the target's tokenizer is stood in for by the byte-level one (at most
        as many calls)."""
        names, scale = self.params.perturbations, self.params.bitflip_scale
        btok = self.bitflip_tokenizer(model)[0] if "bitflip" in names else None
        tok = (self.target_tokenizer(model) if model is not None and "bitflip_tokens" in names
               else None)
        out: dict[str, Perturb] = {}
        for n in names:
            if n.startswith("bitflip") and model is None and (btok if n == "bitflip" else tok
                                                              ) is None:
                out[n] = get_perturbation("bitflip", bitflip_scale="utf8-percent")
            else:
                out[n] = get_perturbation(n, btok if n == "bitflip" else tok,
                                          bitflip_scale=scale)
        return out

    def plan(self, samples: list[Sample], model: Model | None
             ) -> tuple[RequestPool, dict[str, SamplePlan], dict[str, str]]:
        """All PEARL requests of these samples in one deduplicated pool."""
        pool, plans, errors = RequestPool(), {}, {}
        perts = self.perturbations(model)
        settings = self.params.pearl_settings()
        for s in samples:
            try:
                plans[s.id] = plan_sample(pool, s.id, self.task_input(s), perts, settings,
                                          self.seed)
            except ValueError as e:
                errors[s.id] = f"pearl: {e}"
        return pool, plans, errors

    async def run_items(self, items: list[WorkItem], model: Model) -> list[dict[str, Any]]:
        samples = [Sample.from_dict(it.payload) for it in items]
        records = {s.id: DetectRecord(sample=s.to_dict()) for s in samples}
        if self._uses_logprobs():  # before the first scoring call: checked once per model
            await self.gate().ensure(model)
            if (ref := self.reference(model)) is not None and await self.gate().ensure(ref):
                if self.gate().withheld(ref):  # its scores unused: reference, EZ-MIA
                    _record_errors(records, "reference", [self.gate().reason(ref)])
        await self._scoring(samples, model, records)
        if "pearl" in self.params.detectors:
            if errors := self.access_errors("pearl", model):
                _record_errors(records, "pearl", errors)
            else:
                await self._pearl(samples, model, records)
        return [records[s.id].model_dump() for s in samples]

    # -- score-based families: plug-ins (recitation.detect.scoring) ----------------------
    def plugins(self) -> list[ScoringDetector]:
        """The requested score-based families' plug-ins, in registry order (one instance
        per job, so what they compute once is kept)."""
        if self._plugins is None:
            self._plugins = {}
        out: list[ScoringDetector] = []
        for family in methods.families("detector"):
            if family in GENERATING or family not in self.params.detectors:
                continue
            if family not in self._plugins:
                factory = methods.plugin_of("detector", family)
                if factory is None:
                    raise ConfigError(f"detectors: '{family}' has no plug-in (MethodInfo."
                                      "runner) in the method registry")
                self._plugins[family] = factory()
            out.append(self._plugins[family])
        return out

    def options(self, family: str) -> BaseModel:
        """The family's own options (``MethodInfo.option_model``), typed, defaults filled."""
        return validate("detector", family, self.params.detector_options.get(family, {}))

    def scoring_texts(self) -> list[str]:
        """Every text the score-based families score in the job's shared calls (the samples'
        texts and each family's companions), e.g. to fill a signal store on Ray first."""
        samples, plugins = self.samples(), self.plugins()
        if not any(getattr(p, "needs_scores", True) for p in plugins):
            return []
        return list(dict.fromkeys([s.text for s in samples] + [
            t for p in plugins for t in p.companion_texts(self, samples)]))

    def gate(self) -> LogprobGate:
        """The run's log-probability integrity check (:mod:`recitation.detect.logprob_gate`)."""
        if self._gate is None:
            self._gate = LogprobGate(trust=self.params.trust_logprobs, signals=Path(
                self.params.signals) if self.params.signals else None)
        return self._gate

    def _uses_logprobs(self) -> bool:
        """Whether a requested score-based family reads the target's log-probabilities."""
        return any(WITHHELD & m.access for p in self.plugins()
                   for m in methods.family_methods("detector", p.family))

    def available_access(self, model: Model) -> set[Access]:
        """What this run offers the methods: the target's capabilities (less the
        log-probabilities, when their integrity check failed), and a reference model when
        one is configured."""
        have = methods.model_access(model.capabilities) - self.gate().withheld(model)
        if self.params.reference_model is not None and not self._reference_withheld():
            have.add(Access.REFERENCE_MODEL)
        if self.params.tokenizer:
            have.add(Access.TOKENIZER)
        return have

    def access_errors(self, family: str, model: Model) -> list[str]:
        """Why ``family`` cannot run on ``model`` (empty: it can): what every method of a
        plug-in family needs, or what PEARL's requested perturbations need."""
        have = self.available_access(model)
        where = f"backend '{model.backend}' does not offer it"
        infos = methods.family_methods("detector", family)
        if family == "pearl":
            run = {f"pearl_{p}" for p in self.params.perturbations}
            return [methods.describe_missing(m.name, miss, where) for m in infos
                    if m.name in run and (miss := methods.missing_access(m, have))]
        needs = frozenset.intersection(*(m.access for m in infos))
        miss = [a for a in Access if a in needs and a not in have]
        if WITHHELD & set(miss) & self.gate().withheld(model):
            where = self.gate().reason(model)
        elif Access.REFERENCE_MODEL in miss and self._reference_withheld():
            where = self.gate().reason(self._reference)  # type: ignore[arg-type]
        return [methods.describe_missing(family, miss, where)] if miss else []

    async def _scoring(self, samples: list[Sample], model: Model,
                       records: dict[str, DetectRecord]) -> None:
        plugins = []
        for plugin in self.plugins():
            if errors := self.access_errors(plugin.family, model):
                _record_errors(records, plugin.family, errors)
            else:
                plugins.append(plugin)
        if not plugins:
            return
        n = len(samples)
        companions = [plugin.companion_texts(self, samples) for plugin in plugins]
        scored: list[TokenScores] = []
        if any(getattr(plugin, "needs_scores", True) for plugin in plugins):  # not SaMIA
            scored = await self._token_scores(model, [s.text for s in samples]
                                              + [t for c in companions for t in c])
        start = n
        for plugin, texts in zip(plugins, companions, strict=True):
            own = scored[start:start + len(texts)]
            start += len(texts)
            found = await plugin.score(self, samples, scored[:n], own, model)
            for sid, res in found.items():
                _merge(records[sid], plugin.family, res)

    async def _token_scores(self, model: Model, texts: list[str]) -> list[TokenScores]:
        """The texts' token scores: from the signal store when the run has one (scoring
        only what it lacks, once), else from the model."""
        if not self.params.signals:
            return await model.score(texts)
        from recitation.signals.compute import score_through
        from recitation.signals.store import SignalStore

        if self._signals is None:  # the target's store: its shards' keys read once per run
            self._signals = SignalStore(Path(self.params.signals), model.answer_identity())
        return (await score_through(self._signals, model, texts))[0]

    def reference(self, target: Model) -> Model | None:
        """The reference model (built once), or None when none is configured."""
        if self.params.reference_model is None:
            return None
        if self._reference is None:
            self._reference = self._reference_model(self.params.reference_model, target)
        return None if self._reference_withheld() else self._reference

    def _reference_withheld(self) -> bool:
        """The reference model's log-probabilities failed their integrity check."""
        return self._reference is not None and bool(self.gate().withheld(self._reference))

    async def _pearl(self, samples: list[Sample], model: Model,
                     records: dict[str, DetectRecord]) -> None:
        pool, plans, errors = self.plan(samples, model)
        for sid, err in errors.items():
            records[sid].errors.append(err)
        gens = await model.generate(pool.requests)
        texts = [g.text for g in gens]
        settings = self.params.pearl_settings()
        notes = self.pearl_notes(model)
        short = [sid for sid, plan in plans.items() if short_reference(plan.task)]
        if short:
            log.warning("PEARL: %d of %d samples have a reference under %d words (NCD is "
                        "noisy there; the authors' references are 50-60 words): %s",
                        len(short), len(plans), MIN_REFERENCE_WORDS, ", ".join(short[:5]))
        for sid, plan in plans.items():
            res = score_plan(plan, texts, settings)
            res.update(notes, reference_words=len((res["reference"] or "").split()))
            if sid in short:
                res["warnings"] = [f"reference of {res['reference_words']} words "
                                   f"(< {MIN_REFERENCE_WORDS})"]
            records[sid].add_fields({"pearl": res})
            records[sid].scores += [
                ScoreRecord(sample_id=sid, detector=f"pearl_{pert}_{stat}",
                            score=float(res[pert][stat]), higher_means_member=True)
                for pert in settings.perturbations for stat in ("sensitivity", "gfd", "s_m")]

    def pearl_notes(self, model: Model | None) -> dict[str, Any]:
        """The PEARL definitions in force, stored with every sample's result."""
        p = self.params
        return {"bitflip_scale": p.bitflip_scale,
                "bitflip_tokenizer": self.bitflip_tokenizer(model)[1]
                if "bitflip" in p.perturbations else None,
                "sensitivity_mode": p.sensitivity, "ncd": p.ncd,
                "temperature": p.temperature}

    def _reference_model(self, cfg: ModelConfig, target: Model) -> Model:
        """From the run's context (shares its store, cache, budget and price table)."""
        ref = self.model_for(cfg, target)
        if ref is target or ref.identity() == target.identity():
            raise ConfigError("params.reference_model: the reference model must differ "
                              "from the audited model")
        return ref

    def summarize(self, records: list[tuple[str, dict[str, Any]]]) -> Table:
        from recitation.detect.results import build_report, report_table

        return report_table(build_report([r for _, r in records], self.params, self.seed))

    def finalize(self, records: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        """The calibrated report over every stored sample (built once per execute)."""
        from recitation.detect.results import build_report

        return build_report([r for _, r in records], self.params, self.seed)

    def summary(self, records: list[tuple[str, dict[str, Any]]],
                report: dict[str, Any] | None) -> Table:
        from recitation.detect.results import report_table

        return report_table(report) if report is not None else self.summarize(records)


def _merge(record: DetectRecord, family: str, res: SampleResult) -> None:
    """A plug-in's result for one sample into its record (the shared schema)."""
    if res.error is not None:
        record.errors.append(f"{family}: {res.error}")
    record.scores += res.scores
    record.add_fields(res.fields)


def _record_errors(records: dict[str, DetectRecord], family: str, errors: list[str]
                   ) -> None:
    """Every sample of the chunk gets the errors: the family cannot run on this backend."""
    for rec in records.values():
        rec.errors += [f"{family}: {e}" for e in errors]
