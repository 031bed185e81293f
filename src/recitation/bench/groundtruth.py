"""``recitation bench groundtruth``: every method measured on the model organism.

The organism (:mod:`recitation.organism`) is SmolLM2 fine-tuned on known PDNC passages
(members, each repeated ``dose`` times per epoch) with non-members drawn from the same
novels; one checkpoint per epoch, epoch 0 being the base model (the control). For each
checkpoint this module runs, as ordinary runs of the toolkit's jobs (one run per *unit*, so
each method's calls, tokens and CPU seconds are its own):

* ``whitebox`` — the detect job's white-box family (LOSS, zlib, lowercase, Min-K%,
  Min-K%++ and, from epoch 1, the reference-model ratio with the base model as reference);
* ``recall``, ``dcpdd`` — ReCaLL and DC-PDD;
* ``pearl`` — PEARL's perturbation sensitivity (bit flip and synonym by default);
* every other detector family of the method registry (``samia``, ``neighbourhood``,
  ``ezmia``, ``camia``, and a plug-in's: :func:`units` reads the registry), run alone
  in a detect run;
* ``prefix`` — prefix probing: the first half of each passage (its own spacing), greedy
  continuation, scored against the true second half (exact match, 40-token verbatim
  passages, longest common prefix, ROUGE-L).

The response cache is off for these runs by default (every call is made and counted; a
second run of the benchmark recomputes everything, which is what the determinism test checks).
With ``cache=True`` (``--cache``) deterministic calls are read from and written to the
cross-run response cache, whose local-model keys carry the weights' identity and a digest of
the decoding code and libraries (:func:`recitation.models.local.answer_code`): only the model's
forward passes are reused, every method's computation on them runs again; a unit's calls then
count the cache's answers (``served_from_cache``) and its CPU seconds are not its cost. Each unit's
outcome is saved under ``OUT/units/`` with a key of everything that determines it, so a
killed benchmark resumes where it stopped. :mod:`recitation.bench.analysis` builds the
tables.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from recitation import methods
from recitation.bench.groups import group_of
from recitation.digest import file_sha256
from recitation.errors import ConfigError
from recitation.methods import Access
from recitation.models.config import dtype_key
from recitation.organism.config import digest
from recitation.organism.data import Passage

log = logging.getLogger(__name__)



def _detector_units() -> tuple[tuple[str, ...], frozenset[str], frozenset[str]]:
    """Every detector family of the registry (plug-ins included), those that generate, and
    those that need a reference model (the base model, epoch 0)."""
    families = tuple(methods.families("detector"))
    generating, referenced = set(), set()
    for family in families:
        infos = methods.family_methods("detector", family)
        if any(Access.GENERATE in m.access for m in infos):
            generating.add(family)
        if all(Access.REFERENCE_MODEL in m.access for m in infos):
            referenced.add(family)
    return families, frozenset(generating), frozenset(referenced)


VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "samia@published": ("samia", {"samia_max_tokens": None, "samia_words": "whitespace"}),
    "camia@published": ("camia", {}),
}
"""Units that run a detector family in its published setting beside our default: named
``<family>@<setting>``, their scores carry the same suffix
(:func:`recitation.bench.analysis.detector_scores`); each setting's options replace the
unit's (None: the option dropped, the detector's own default). SaMIA's authors continue to
1,024 tokens in all (``generate(max_length=1024)``; our default stops at the passage's
length) and, on their un-wrapped text, ``split(" ")`` splits on whitespace. CAMIA's
authors give each of their 25 keys its own sign: ``camia_signs``, fixed on a development
organism (:mod:`recitation.bench.claims_camia`), on texts of 200+ tokens."""


def units() -> tuple[str, ...]:
    """A unit per detector family of the method registry (read now, importing no detector),
    then prefix probing and extraction, then the published-setting variants."""
    return (*methods.families("detector"), "prefix", "extract", *VARIANTS)


def base_unit(unit: str) -> str:
    """The unit a variant (:data:`VARIANTS`) runs; any other unit itself."""
    return VARIANTS[unit][0] if unit in VARIANTS else unit


def generating(unit: str) -> bool:
    """Whether ``unit`` generates (prefix probing, extraction, a family that needs it)."""
    unit = base_unit(unit)
    return unit in ("prefix", "extract") or unit in _detector_units()[1]


def referenced(unit: str) -> bool:
    """Whether ``unit`` needs a reference model (the base model, epoch 0)."""
    return base_unit(unit) in _detector_units()[2]


DEFAULT_UNITS: tuple[str, ...] = ("whitebox", "recall", "dcpdd", "pearl", "prefix", "extract")
FORMAT = 1
"""Bumped whenever a unit's runs change for the same settings (invalidates saved units)."""

Progress = Callable[[str], None]


class GroundTruthConfig(BaseModel):
    """What the benchmark runs. Defaults: the published settings where the budget allows
    (see docs/benchmarks.md for the differences)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    organism: str = "default"
    epochs: tuple[int, ...] | None = None  # None: every checkpoint
    units: tuple[str, ...] = DEFAULT_UNITS
    perturbations: tuple[str, ...] = ("bitflip", "synonym")
    pearl_outputs: int = Field(1, ge=1)  # the papers: 10; ~570 s per output per checkpoint on
    # 2 CPU cores at 48 passages (docs/benchmarks.md), so one output by default
    pearl_epochs: tuple[int, ...] | None = None  # None: every checkpoint measured
    pearl_max_intensity: int = Field(5, ge=1)
    pearl_temperature: float = Field(0.3, ge=0)
    reference: bool = True  # whitebox "reference" score with the base model (epoch >= 1)
    prefix_fraction: float = Field(0.5, gt=0, lt=1)
    n_bootstrap: int = Field(1000, ge=0)
    batch_size: int = Field(16, ge=1)  # requests per batched model call (local backend)
    # the generating units' batch (None: batch_size): a decoding step of a small model on a
    # CPU costs little more for many rows than for a few (models/rendezvous.py: 30
    # continuations in 48.3 s in batches of 8, in 22.4 s in one), so large runs decode wider
    generation_batch_size: int | None = Field(None, ge=1)
    # the checkpoints' weights (models/config.py LOCAL_DTYPES): bfloat16 scores 2.6x and
    # generates 1.8x as fast on a CPU with AVX-512 BF16, 4.7x and 2.6x slower on one without,
    # scores close to float32's (docs/benchmarks.md)
    dtype: Literal["float32", "bfloat16"] = "float32"
    seed: int = 0
    cache: bool = False  # the cross-run response cache for deterministic calls (module doc)
    # the score-based units read and fill one token-signal store per checkpoint
    # (OUT/signals/epochN, recitation.signals): each text scored once for every detector
    signals: bool = False
    # the store's folder (None: OUT/signals), so organisms can share it: a model's signals
    # live under a digest of its identity
    signals_dir: str | None = None
    # the organism whose base checkpoint (epoch 0) is the reference model (None: this one's)
    reference_organism: str | None = None
    # camia@published: CAMIA's per-key signs, fixed on a development organism
    camia_signs: dict[str, int] | None = None
    # the extract unit (DSP, RECAP, RECAP + filter): runs only when a helper is given
    helper: str | None = None  # model spec of RECAP's helper (summaries, hints, judge)
    extract_methods: tuple[str, ...] = ("dsp", "recap", "recap_filter")
    extract_epochs: tuple[int, ...] | None = None  # None: the first and the last checkpoint
    extract_rounds: int = Field(5, ge=0)  # feedback rounds at most (the paper's 5)
    extract_passages: int | None = Field(None, ge=1)  # per dose group and non-members
    helper_max_tokens: int = Field(256, ge=16)  # summary and hint replies (CPU budget)
    summary_attempts: int = Field(1, ge=1)  # the summary agent's asks (released: 3)
    filter_epochs: int = Field(20, ge=1)  # the filter's parrot training, epoch-bounded
    # a stratified subsample (seeded): members per dose and non-members, for the costliest
    # units (subsample_units); None: every passage
    subsample_members: int | None = Field(None, ge=1)
    subsample_nonmembers: int | None = Field(None, ge=1)
    subsample_units: tuple[str, ...] = ("pearl", "samia", "neighbourhood", "prefix")

    @field_validator("units")
    @classmethod
    def _units(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        known = units()
        bad = [u for u in v if u not in known]
        if bad or not v:
            raise ValueError(f"unknown unit(s) {bad}; choose from {list(known)}")
        return v

    @field_validator("extract_methods")
    @classmethod
    def _methods(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        from recitation.bench.extraction import EXTRACT_METHODS

        bad = [m for m in v if m not in EXTRACT_METHODS]
        if bad or not v:
            raise ValueError(f"unknown extract method(s) {bad}; choose from "
                             f"{list(EXTRACT_METHODS)}")
        return v


QUICK = GroundTruthConfig(organism="quick", pearl_outputs=1, pearl_max_intensity=3,
                          pearl_epochs=(2,), n_bootstrap=200)
"""CI-sized: PEARL (the costliest unit) on the last checkpoint of the quick organism only."""
LOWFPR = GroundTruthConfig(
    organism="lowfpr", epochs=(1,),
    units=("whitebox", "recall", "dcpdd", "ezmia", "camia", "neighbourhood", "samia", "pearl"),
    pearl_epochs=(1,), pearl_max_intensity=3, subsample_members=100,
    subsample_nonmembers=400, n_bootstrap=200, cache=True, generation_batch_size=128)
"""The low-FPR benchmark (issue 31) on the ``lowfpr`` organism: every score-based detector
on all 1,500 passages, the generating ones and the neighbourhood attack (25 scorings per
text) on 200 members (100 per dose) and 400 non-members."""


@dataclass
class UnitOutcome:
    """One unit on one checkpoint: its stored records and what it cost."""

    epoch: int
    unit: str
    key: str
    status: str
    records: list[dict[str, Any]]
    calls: dict[str, Any]
    cpu_seconds: float
    wall_seconds: float
    run_dir: str


# -- the data ------------------------------------------------------------------------------
def subsample(passages: Sequence[Passage], members: int, nonmembers: int,
              seed: int) -> list[Passage]:
    """A seeded stratified subsample: ``members`` of each dose, ``nonmembers`` non-members
    (all of a stratum that has fewer), in the passages' order."""
    keep: set[str] = set()
    for dose in sorted({p.dose for p in passages}):
        keep |= set(subsample_order(passages, dose, seed)[: nonmembers if dose == 0 else members])
    return [p for p in passages if p.id in keep]


def subsample_order(passages: Sequence[Passage], dose: int, seed: int) -> list[str]:
    """A dose's passage ids in the seeded order :func:`subsample` takes them in."""
    import random

    ids = sorted(p.id for p in passages if p.dose == dose)
    random.Random(f"subsample:{seed}:{dose}").shuffle(ids)
    return ids


def sample_files(passages: Sequence[Passage], out: Path, extract_passages: int | None = None,
                 cfg: GroundTruthConfig | None = None) -> dict[str, Path]:
    """``members.jsonl`` / ``nonmembers.jsonl`` (detect samples; ``*_sub.jsonl`` for the
    subsample when ``cfg`` sets one) and ``passages.jsonl`` (prefix probing; ``group`` =
    ``dose<d>`` or ``nonmember``) under ``out/data``."""
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    rows = {"members": [p for p in passages if p.member],
            "nonmembers": [p for p in passages if not p.member]}
    if cfg is not None and cfg.subsample_members and cfg.subsample_nonmembers:
        few = subsample(passages, cfg.subsample_members, cfg.subsample_nonmembers, cfg.seed)
        rows |= {"members_sub": [p for p in few if p.member],
                 "nonmembers_sub": [p for p in few if not p.member]}
    files = {}
    for name, ps in rows.items():
        files[name] = _write_jsonl(data / f"{name}.jsonl",
                                   [{"id": p.id, "text": p.text} for p in ps])
    files["passages"] = _write_jsonl(data / "passages.jsonl", [
        {"id": p.id, "text": p.text, "group": group_of(p)} for p in passages])
    if "members_sub" in rows:
        files["passages_sub"] = _write_jsonl(data / "passages_sub.jsonl", [
            {"id": p.id, "text": p.text, "group": group_of(p)}
            for p in rows["members_sub"] + rows["nonmembers_sub"]])
    from recitation.bench.extraction import extract_selection, write_book

    files["book"] = write_book(extract_selection(passages, extract_passages),
                               data / f"book{extract_passages or ''}.json")
    return files


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


# -- one unit ------------------------------------------------------------------------------
def unit_params(unit: str, cfg: GroundTruthConfig, files: dict[str, Path], epoch: int,
                checkpoints: dict[int, Path], passage_tokens: int) -> tuple[str, dict[str, Any]]:
    """(job name, job params) of ``unit`` on checkpoint ``epoch``."""
    if unit in VARIANTS:
        return variant_params(unit, cfg, files, epoch, checkpoints, passage_tokens)
    if unit == "extract":
        from recitation.bench.extraction import extract_params

        return "extract", extract_params(cfg, files["book"], passage_tokens)
    sub = "_sub" if unit in cfg.subsample_units and "members_sub" in files else ""
    if unit == "prefix":
        return "prefix_probe", {
            "source": "jsonl", "path": str(files["passages" + sub]), "group_field": "group",
            "max_words": 100_000, "prefix_fraction": cfg.prefix_fraction,
            "max_new_tokens": math.ceil((1 - cfg.prefix_fraction) * passage_tokens) + 16,
            "mode": "completion",
            "temperature": 0.0, "keep_spacing": True}
    params: dict[str, Any] = {
        "members": [str(files["members" + sub])], "controls": [str(files["nonmembers" + sub])],
        "detectors": [unit], "labelled": True, "n_bootstrap": 0}
    if cfg.signals and not generating(unit):
        root = (Path(cfg.signals_dir) if cfg.signals_dir
                else files["passages"].parent.parent / "signals")
        params["signals"] = str(root / f"epoch{epoch}")
    if unit == "samia":  # the continuation need only cover the passage's second half
        params["samia_max_tokens"] = passage_tokens
    if unit == "pearl":
        params |= {"perturbations": list(cfg.perturbations), "outputs": cfg.pearl_outputs,
                   "max_intensity": cfg.pearl_max_intensity,
                   "temperature": cfg.pearl_temperature}
    if (referenced(unit) or unit == "whitebox" and cfg.reference) and epoch != 0 \
            and 0 in checkpoints:
        base = cfg.reference_organism or cfg.organism
        params["reference_model"] = {"backend": "local", "concurrency": 1,
                                     "model": f"organism:{base}:epoch0",
                                     **dtype_key(cfg.dtype)}
    return "detect", params


def variant_params(unit: str, cfg: GroundTruthConfig, files: dict[str, Path], epoch: int,
                   checkpoints: dict[int, Path], passage_tokens: int
                   ) -> tuple[str, dict[str, Any]]:
    """The params of a published-setting variant: its family's, on the variant's sample
    (the subsample when the variant is a subsampled unit), with the setting's options."""
    base, setting = VARIANTS[unit]
    sub = tuple(u for u in cfg.subsample_units if u != base)
    inner = cfg.model_copy(update={"subsample_units": sub + (
        (base,) if unit in cfg.subsample_units else ())})
    job, params = unit_params(base, inner, files, epoch, checkpoints, passage_tokens)
    if base == "camia":
        if not cfg.camia_signs:
            raise ConfigError("camia@published needs the per-key signs fixed on a "
                              "development organism (camia_signs; recitation bench claims "
                              "measures them)")
        params["camia_signs"] = dict(cfg.camia_signs)
    for key, value in setting.items():
        if value is None:
            params.pop(key, None)
        else:
            params[key] = value
    return job, params


def unit_batch_size(unit: str, cfg: GroundTruthConfig) -> int:
    """Requests per batched model call for ``unit``: ``generation_batch_size`` (when set)
    for the generating units, else ``batch_size``."""
    if generating(unit) and cfg.generation_batch_size is not None:
        return cfg.generation_batch_size
    return cfg.batch_size


def unit_key(job: str, params: dict[str, Any], seed: int, model_id: dict[str, Any]) -> str:
    """Everything that determines a unit's records (the saved outcome is reused only when
    this matches)."""
    return digest({"format": FORMAT, "job": job, "params": params, "seed": seed,
                   "model": model_id})


async def run_unit(job: str, params: dict[str, Any], model: str, seed: int, runs_dir: Path,
                   batch_size: int = 16, cache: bool = False, dtype: str = "float32"
                   ) -> tuple[dict[str, Any], list[dict[str, Any]], Path, str]:
    """Create and execute one run (the response cache off unless ``cache``); returns its
    call totals, records, directory and status."""
    from recitation.runs.config import RunConfig
    from recitation.runs.runner import create_run, execute
    from recitation.runs.store import RunStore

    cfg = RunConfig(job=job, name=f"groundtruth-{job}", seed=seed, cache=cache,
                    model={"backend": "local", "model": model, "concurrency": 1,
                           "batch_size": batch_size, "dtype": dtype},
                    params=params)
    run_dir = create_run(cfg, runs_dir)
    outcome = await execute(run_dir, use_cache=cache)
    with RunStore(run_dir) as store:
        records = [{"item_id": item_id} | r for item_id, r in store.results(job)]
        calls = store.call_totals()
    return calls, records, run_dir, outcome.status


def measure_unit(epoch: int, unit: str, cfg: GroundTruthConfig, files: dict[str, Path],
                 checkpoints: dict[int, Path], model_ids: dict[int, dict[str, Any]],
                 passage_tokens: int, out: Path, *, run: bool = True) -> UnitOutcome | None:
    """Run ``unit`` on checkpoint ``epoch`` unless its saved outcome has the same key
    (``run=False``: the saved outcome or None)."""
    job, params = unit_params(unit, cfg, files, epoch, checkpoints, passage_tokens)
    batch = unit_batch_size(unit, cfg)
    key = unit_key(job, _portable(params, out), cfg.seed,
                   model_ids[epoch] | {"batch_size": batch,
                                       "reference": model_ids.get(0) if "reference_model"
                                       in params else None}
                   | ({"helper": params["helper"]} if "helper" in params else {}))
    saved = out / "units" / f"epoch{epoch}-{unit}.json"
    if saved.exists():
        doc = json.loads(saved.read_text(encoding="utf-8"))
        if doc.get("key") == key and doc.get("status") == "completed":
            return UnitOutcome(**doc)
    if not run:
        return None
    cpu0, wall0 = time.process_time(), time.perf_counter()
    calls, records, run_dir, status = asyncio.run(
        run_unit(job, params, f"organism:{cfg.organism}:epoch{epoch}", cfg.seed,
                 out / "runs", batch, cfg.cache, cfg.dtype))
    res = UnitOutcome(epoch, unit, key, status, records, calls,
                      time.process_time() - cpu0, time.perf_counter() - wall0, str(run_dir))
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps(asdict(res), ensure_ascii=False), encoding="utf-8")
    return res


def _portable(params: dict[str, Any], out: Path) -> dict[str, Any]:
    """``params`` with paths under ``out`` made relative (the key does not depend on where
    the benchmark directory is) with a digest of each file's content (a sample file
    rewritten with another subsample gives another key), and checkpoint paths dropped (the
    model ids stand for them)."""
    def fix(v: Any) -> Any:
        if isinstance(v, str) and v.startswith(str(out)):
            rel = v[len(str(out)):].lstrip("/")
            return f"{rel}#{file_sha256(v)[:16]}" if Path(v).is_file() else rel
        if isinstance(v, list):
            return [fix(x) for x in v]
        if isinstance(v, dict):
            return {k: fix(x) for k, x in v.items() if k != "model"}
        return v
    return {k: fix(v) for k, v in params.items()}


# -- the whole benchmark ---------------------------------------------------------------------
def unit_epochs(unit: str, cfg: GroundTruthConfig, epochs: list[int]) -> list[int]:
    """The checkpoints ``unit`` runs on (pearl: ``pearl_epochs`` if set; extract:
    ``extract_epochs``, by default the first and the last of ``epochs``)."""
    if unit == "pearl" and cfg.pearl_epochs is not None:
        return [e for e in epochs if e in cfg.pearl_epochs]
    if referenced(unit):  # the base model is their reference: nothing to compare at 0
        return [e for e in epochs if e != 0]
    if unit != "extract":
        return epochs
    if cfg.extract_epochs is not None:
        return [e for e in epochs if e in cfg.extract_epochs]
    return sorted({epochs[0], epochs[-1]}) if epochs else []


def checkpoint_ids(manifest: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """Per epoch: what the checkpoint is (organism fingerprint, epoch, weight hashes)."""
    return {int(e["epoch"]): {"organism": manifest.get("fingerprint"), "epoch": e["epoch"],
                              "weights": e.get("digest")}
            for e in manifest.get("epochs", [])}


@dataclass
class Measured:
    """The organism the benchmark ran on and every unit's outcome."""

    manifest: dict[str, Any]
    passages: list[Passage]
    outcomes: list[UnitOutcome]


def run_units(cfg: GroundTruthConfig, out: Path, *, progress: Progress | None = None,
              run: bool = True) -> Measured:
    """Run every unit on every chosen checkpoint of the built organism ``cfg.organism``
    (saved units with the same key are reused; ``run=False``: only those, nothing runs)."""
    from recitation.organism.data import load_split
    from recitation.organism.paths import SPLIT, organism_checkpoint, organism_dir, read_manifest

    manifest = read_manifest(cfg.organism)
    passages = load_split(organism_dir(cfg.organism) / SPLIT)
    all_epochs = sorted(int(e["epoch"]) for e in manifest["epochs"])
    epochs = list(cfg.epochs) if cfg.epochs is not None else all_epochs
    missing = [e for e in epochs if e not in all_epochs]
    if missing:
        raise ConfigError(f"bench groundtruth: organism {cfg.organism!r} has no epoch(s) "
                          f"{missing}; it has {all_epochs}")
    checkpoints = {e: organism_checkpoint(f"{cfg.organism}:epoch{e}") for e in all_epochs}
    ids = {e: i | dtype_key(cfg.dtype) for e, i in checkpoint_ids(manifest).items()}
    out.mkdir(parents=True, exist_ok=True)
    files = sample_files(passages, out, cfg.extract_passages, cfg)
    tokens = int(manifest["config"]["passage_tokens"])
    outcomes: list[UnitOutcome] = []
    # the cheap scoring units on every checkpoint first, generation (prefix, PEARL) last:
    # a benchmark stopped early has every score of every checkpoint
    known = units()
    order = sorted(cfg.units, key=lambda u: (generating(u), known.index(u)))
    for unit in order:
        if unit == "extract" and cfg.helper is None:
            if progress and run:
                progress("extract: skipped (RECAP needs a helper model: --helper SPEC)")
            continue
        for epoch in unit_epochs(unit, cfg, epochs):
            if progress and run:
                progress(f"epoch {epoch}: {unit}")
            found = measure_unit(epoch, unit, cfg, files, checkpoints, ids, tokens, out,
                                 run=run)
            if found is not None:
                outcomes.append(found)
    outcomes.sort(key=lambda o: (o.epoch, known.index(o.unit)))
    return Measured(manifest, passages, outcomes)
