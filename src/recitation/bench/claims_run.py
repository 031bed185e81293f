"""``recitation bench claims``: membership inference at 1% and 0.1% FPR, measured so that
every claim survives a reviewer (issue 49).

* **Organisms.** A *development* organism (``claims-dev``, seed 3, 1,000 non-members) on
  which every choice is fixed (the ``k`` of Min-K%, Min-K%++, Gap-K%: the variant with the
  highest TPR at 1% FPR there), and three *test* organisms (``claims-s0`` .. ``claims-s2``,
  seeds 0-2: other member draws and training orders) with 10,000 non-members each, all
  built as the ``lowfpr`` preset otherwise (250 members seen once, 250 seen four times, one
  epoch at learning rate 1e-5, 64-token PDNC passages). Members are never trained on twice
  by name: each organism is its own fine-tune of the base model.
* **Shared non-members.** ``claims-s1`` and ``claims-s2`` take ``claims-s0``'s non-members
  (organism ``nonmembers_seed``) and draw their own members from the rest; all organisms
  share one token-signal store (``OUT/signals``) and one reference model, the development
  organism's base checkpoint (the same weights as every organism's epoch 0, checked): the
  base model scores each non-member once (``shared_nonmembers``).
* **Scores.** The score-based units of :mod:`recitation.bench.groundtruth` on each
  fine-tuned checkpoint (epoch 1), every text scored once into the token-signal store and
  every call kept in the response cache, so a killed run resumes where it stopped; each
  organism's one-pass units (white-box, DC-PDD, EZ-MIA) first, then ReCaLL (each text again
  after a 192-token prefix, scored once per batch) and the generating units
  (``generating``, on a seeded subsample), before the next organism, so an organism's units
  score one build of it where a run fits in a session. Float32 by default: about 0.25 s
  per scoring of a 64-token passage on a 2-core AMD EPYC without AVX-512
  (docs/leaderboard.md). Blind baselines read no model: the
  bag-of-words classifier of :mod:`recitation.detect.blind` (out of fold, Das et al. 2024)
  and the passage's length.
* **Records.** Per organism ``OUT/<organism>/claims-scores.json``: each passage (id, dose,
  calibration or test half), each score, and per unit the weights it scored (the
  checkpoint's digest), the host and the weight type; :mod:`recitation.bench.claims_analysis`
  reads only these. A unit in the records is never run again. ``--keep DIR`` keeps a gzip
  copy of each organism's records in ``DIR`` as they are written and restores them into a
  fresh ``OUT``: a run resumes on another machine (the caches and organisms there are gone)
  at the first unit missing, rebuilding the organism from its config; the tables say when an
  organism's units scored more than one build of it (another host's float arithmetic gives
  other weights digests).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from recitation.bench.lowfpr import calibration_half
from recitation.errors import ConfigError

SCORE_UNITS = ("whitebox", "dcpdd", "ezmia", "recall")
LATE_UNITS = ("recall",)
"""Run on an organism after its other units: ReCaLL scores each text again after a prefix,
where the others read the white-box unit's scorings, so a run stopped part-way keeps the
one-pass scores (records are written after each pass)."""
RECORDS = "claims-scores.json"
Progress = Callable[[str], None]


class ClaimsConfig(BaseModel):
    """What ``recitation bench claims`` measures (module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seeds: tuple[int, ...] = (0, 1, 2)
    dev_seed: int = 3
    nonmembers: int = Field(10_000, ge=2)
    dev_nonmembers: int = Field(1_000, ge=2)
    preset: str = "lowfpr"
    units: tuple[str, ...] = SCORE_UNITS
    # units that generate (or score 25 neighbours per text: the neighbourhood attack) run on
    # a seeded stratified subsample of each organism: members per dose, non-members (and
    # more until each calibration half holds half of them: subsample_nonmembers)
    generating: tuple[str, ...] = ()
    sub_members: int = Field(100, ge=1)
    sub_nonmembers: int = Field(1_000, ge=2)
    # score-based units on that subsample too (none by default: ReCaLL's prefixed texts
    # share their 192-token prefix, scored once per batch, so it costs about 1.3 scorings of
    # a text, 0.28 CPU s: docs/leaderboard.md); their tables then support only the FPRs the
    # subsample measures
    subsampled: tuple[str, ...] = ()
    # the test organisms after the first draw its non-members (organism nonmembers_seed) and
    # every organism's models share one signal store with one reference model (the
    # development organism's base checkpoint, the same weights in each): the base model
    # scores each non-member once, not once per organism
    shared_nonmembers: bool = True
    # float32: the papers' type for models this size; bfloat16 is host-dependent: 2.6x as fast
    # as float32 on a CPU with AVX-512 BF16, 4.7x slower on one without (docs/benchmarks.md)
    dtype: str = "float32"
    batch_size: int = Field(16, ge=1)
    alphas: tuple[float, ...] = (0.01, 0.001)
    n_boot: int = Field(2000, ge=100)
    seed: int = 0  # the calibration halves and the bootstrap

    @model_validator(mode="after")
    def _something_to_run(self) -> ClaimsConfig:
        bad = [u for u in self.units if u not in SCORE_UNITS]
        if bad:
            raise ValueError(f"unknown score unit(s) {bad}; choose from {list(SCORE_UNITS)}")
        if not self.units and not self.generating:
            raise ValueError("no units to run: give score units or generating ones")
        return self


@dataclass
class OrganismScores:
    """One organism's records: its passages (dose 0: non-member), which non-members set
    thresholds, and every score (passage id -> score, higher means member)."""

    name: str
    seed: int
    dev: bool
    passages: list[dict[str, Any]]
    scores: dict[str, dict[str, float]]
    costs: list[dict[str, Any]]
    # unit -> what it scored: {"weights": {epoch: digest}, "host": ..., "dtype": ...}
    units: dict[str, dict[str, Any]] = field(default_factory=dict)

    def builds(self) -> int:
        """How many builds of the organism (distinct checkpoint digests) its units scored:
        more than one where a later session rebuilt it on another host."""
        return len({json.dumps(u.get("weights"), sort_keys=True) for u in self.units.values()
                    if u.get("weights")})

    def members(self, group: str) -> list[str]:
        """Member ids of dose ``group`` (``all``: every member), in passage order."""
        return [p["id"] for p in self.passages
                if p["dose"] > 0 and (group == "all" or str(p["dose"]) == group)]

    def nonmembers(self, calibration: bool) -> list[str]:
        return [p["id"] for p in self.passages
                if p["dose"] == 0 and p["calibration"] == calibration]

    def groups(self) -> list[str]:
        return ["all"] + [str(d) for d in sorted({p["dose"] for p in self.passages}) if d]


def organism_name(cfg: ClaimsConfig, seed: int, dev: bool) -> str:
    """``claims-dev`` / ``claims-sN`` for the default sizes; other presets and sizes get a
    digest of them in the name, so a small run never replaces the benchmark's organisms."""
    import hashlib

    sizes = (cfg.preset, cfg.nonmembers, cfg.dev_nonmembers)
    default = ClaimsConfig()
    tag = "" if sizes == (default.preset, default.nonmembers, default.dev_nonmembers) else (
        "-" + hashlib.sha256(repr(sizes).encode()).hexdigest()[:8])
    return f"claims{tag}-dev" if dev else f"claims{tag}-s{seed}"


def organism_config(cfg: ClaimsConfig, seed: int, dev: bool) -> Any:
    """One organism's config; the test organisms after the first draw the first one's
    non-members when ``cfg.shared_nonmembers``."""
    from recitation.organism.config import make_config

    built = make_config(preset=cfg.preset, name=organism_name(cfg, seed, dev), seed=seed,
                        nonmembers=cfg.dev_nonmembers if dev else cfg.nonmembers)
    if cfg.shared_nonmembers and not dev and seed != cfg.seeds[0]:
        return built.model_copy(update={"nonmembers_seed": cfg.seeds[0]})
    return built


def shared_reference(cfg: ClaimsConfig, name: str, out: Path) -> dict[str, Any]:
    """The groundtruth settings that share one signal store and one reference model (the
    development organism's base checkpoint) across organisms; an error when organism
    ``name``'s base checkpoint is not the same weights (manifest digests of epoch 0). The
    store: ``out/signals``."""
    from recitation.organism.paths import read_manifest

    if not cfg.shared_nonmembers:
        return {}
    ref = organism_name(cfg, cfg.dev_seed, True)

    def base_digest(organism: str) -> str:
        return str(next(e["digest"] for e in read_manifest(organism)["epochs"]
                        if e["epoch"] == 0))

    if base_digest(name) != base_digest(ref):
        raise ConfigError(f"bench claims: {name}'s base checkpoint differs from {ref}'s, so "
                          "they cannot share a reference model; set shared_nonmembers off")
    return {"signals_dir": str(out / "signals"), "reference_organism": ref}


def organisms(cfg: ClaimsConfig) -> list[tuple[int, bool]]:
    """(seed, development?) of every organism, the development one first."""
    if cfg.dev_seed in cfg.seeds:
        raise ConfigError(f"bench claims: the development seed {cfg.dev_seed} is also a test "
                          "seed; choices must be fixed on an organism the tables never read")
    return [(cfg.dev_seed, True)] + [(s, False) for s in cfg.seeds]


def measure_organism(cfg: ClaimsConfig, seed: int, dev: bool, out: Path, *,
                     progress: Progress | None = None, run: bool = True,
                     units: tuple[str, ...] | None = None,
                     keep: Path | None = None) -> OrganismScores:
    """Build (or reuse) one organism, run its score units that its records lack and write
    the records, the new scores merged into them; ``run=False`` reads the records already
    written. Units in the records are never run again (a fresh machine given the kept
    records, ``--keep``, resumes at the first unit missing); ``keep``: the folder that gets
    a gzip copy of the records each time they are written."""
    name = organism_name(cfg, seed, dev)
    path = out / name / RECORDS
    if not run:
        return load_scores(path)
    generating = tuple(u for u in cfg.generating if not (dev and u == PUBLISHED_CAMIA))
    wanted = cfg.units + generating if units is None else units
    before = load_scores(path) if path.exists() else None
    todo = tuple(u for u in wanted if before is None or u not in before.units)
    if before is not None and not todo:
        if progress:
            progress(f"{name}: {', '.join(wanted)} already in its records")
        return before
    res = merged(before, _run_units(cfg, seed, dev, out, todo, progress), cfg.dtype)
    save_scores(path, res)
    if keep is not None:
        keep_records(path, keep / f"{name}{KEPT_SUFFIX}")
    return res


def _run_units(cfg: ClaimsConfig, seed: int, dev: bool, out: Path, todo: tuple[str, ...],
               progress: Progress | None) -> OrganismScores:
    """Build (or reuse) the organism and run units ``todo`` on it: their scores, the blind
    baselines, what each cost and which weights each unit scored."""
    from recitation.bench.analysis import cost_row, detector_scores, host
    from recitation.bench.groundtruth import LOWFPR, run_units
    from recitation.organism.build import build_organism

    name = organism_name(cfg, seed, dev)
    t0 = time.perf_counter()
    built = build_organism(organism_config(cfg, seed, dev))
    if progress:
        progress(f"{name}: {'reused' if built.reused else 'built'} ({built.directory}); "
                 f"running {', '.join(todo)}")
    gt = LOWFPR.model_copy(update={
        "organism": name, "units": todo, "dtype": cfg.dtype,
        **({} if dev else camia_signs(cfg, out)),
        "signals": True, "seed": cfg.seed, "n_bootstrap": 0, "batch_size": cfg.batch_size,
        "subsample_units": cfg.generating + cfg.subsampled,
        "subsample_members": cfg.sub_members,
        "subsample_nonmembers": subsample_nonmembers(cfg, name),
        **shared_reference(cfg, name, out)})
    measured = run_units(gt, out / name, progress=progress)
    refuse_unscored(measured.outcomes, out / name)
    scores: dict[str, dict[str, float]] = {}
    for o in measured.outcomes:
        scores |= detector_scores(o)
    texts = {p.id: p.text for p in measured.passages}
    scores |= blind_scores(texts, {p.id for p in measured.passages if p.member}, cfg.seed)
    cal = calibration_half((p.id for p in measured.passages if not p.member), cfg.seed)
    weights = {str(e["epoch"]): str(e["digest"]) for e in measured.manifest["epochs"]
               if gt.epochs is None or e["epoch"] in gt.epochs}
    scored = {"weights": weights, "host": host(), "dtype": cfg.dtype}
    return OrganismScores(name, seed, dev, [
        {"id": p.id, "dose": p.dose, "calibration": p.id in cal} for p in measured.passages],
        scores, [cost_row(o) for o in measured.outcomes]
        + [{"unit": "organism", "built": not built.reused, "host": scored["host"],
            "wall_seconds": round(time.perf_counter() - t0, 1)}],
        {u: scored for u in todo})


def refuse_unscored(outcomes: list[Any], folder: Path) -> None:
    """Stop when a unit scored none of its items and says why (every record an error, e.g.
    a model whose log-probability integrity check failed): such a unit is not kept in the
    records, and its saved file is removed so that the next run runs it again."""
    for o in outcomes:
        recs = o.records
        if any(r.get("scores") for r in recs) or not any(r.get("errors") for r in recs):
            continue
        first = next(e for r in recs for e in r.get("errors", []))
        (folder / "units" / f"epoch{o.epoch}-{o.unit}.json").unlink(missing_ok=True)
        raise ConfigError(
            f"bench claims: {folder.name}'s unit {o.unit} (epoch {o.epoch}) scored none of "
            f"its {len(recs)} items, so nothing of it is kept; the first item's error: "
            f"{first}. Fix the cause and run the same command again (the unit runs again)")


def merged(before: OrganismScores | None, new: OrganismScores, dtype: str) -> OrganismScores:
    """``new``'s units added to the records ``before`` (None: none yet); an error when they
    hold another split of passages or were scored in another weight type."""
    if before is None:
        return new
    if before.passages != new.passages:
        raise ConfigError(f"bench claims: the records of {new.name} hold another split of "
                          "passages than its organism now has; remove them (or --keep's "
                          "copy) or use another --out")
    other = sorted({str(v.get("dtype")) for v in before.units.values()} - {dtype, "None"})
    if other:
        raise ConfigError(f"bench claims: {new.name}'s records were scored in {other[0]}, "
                          f"this run in {dtype}; rerun with --dtype {other[0]}")
    return OrganismScores(new.name, new.seed, new.dev, new.passages,
                          before.scores | new.scores, before.costs + new.costs,
                          before.units | new.units)


PUBLISHED_CAMIA = "camia@published"
"""Not run on the development organism: its labels fix the signs the test organisms use."""


def camia_signs(cfg: ClaimsConfig, out: Path) -> dict[str, Any]:
    """``{"camia_signs": ...}`` when ``camia@published`` is among the generating units: the
    per-key signs fixed on the development organism's subsample
    (:func:`recitation.bench.claims_camia.published_signs`), else nothing."""
    if PUBLISHED_CAMIA not in cfg.generating:
        return {}
    from recitation.bench.claims_camia import published_signs
    from recitation.bench.groundtruth import subsample
    from recitation.organism.data import load_split
    from recitation.organism.paths import SPLIT, organism_dir

    name = organism_name(cfg, cfg.dev_seed, True)

    def texts() -> list[tuple[str, bool]]:
        return [(p.text, p.member) for p in subsample(
            load_split(organism_dir(name) / SPLIT), cfg.sub_members,
            subsample_nonmembers(cfg, name), cfg.seed)]

    return {"camia_signs": published_signs(name, out, texts, cfg.dtype)}


def settle_signs(cfg: ClaimsConfig, out: Path, keep: Path | None,
                 progress: Progress | None) -> None:
    """Once the development organism is measured: ``camia@published``'s signs measured now,
    where its organism is built (or read back), and kept in ``keep``, so a run resumed
    elsewhere needs the development organism no more."""
    from recitation.bench.claims_camia import keep_signs, signs_line

    signs = camia_signs(cfg, out)
    if not signs:
        return
    if progress:
        progress(signs_line(signs["camia_signs"]))
    if keep is not None:
        keep_signs(organism_name(cfg, cfg.dev_seed, True), out, keep)


def subsample_nonmembers(cfg: ClaimsConfig, name: str) -> int:
    """How many non-members organism ``name``'s subsample takes (:func:`balanced_count`):
    its calibration halves are drawn over all its non-members, so ``sub_nonmembers`` of them
    split unevenly (512 / 488 on the default organisms: a test half under the 500 that
    measure 1% FPR); the subsample goes on in its seeded order until each half has its share
    of the non-members the units score. CAMIA scores none of the 30% it calibrates on
    (:func:`recitation.detect.camia.population_ids`), so with a CAMIA unit the subsample
    goes on until the other 70% give each half its share."""
    from recitation.bench.groundtruth import base_unit, subsample_order
    from recitation.organism.data import load_split
    from recitation.organism.paths import SPLIT, organism_dir

    passages = load_split(organism_dir(name) / SPLIT)
    cal = calibration_half((p.id for p in passages if not p.member), cfg.seed)
    order = subsample_order(passages, 0, cfg.seed)
    if "camia" not in {base_unit(u) for u in cfg.generating}:
        return balanced_count(order, cal, cfg.sub_nonmembers)
    from recitation.detect.camia import population_ids

    rank = {p.id: i for i, p in enumerate(passages)}  # the job's controls: the split's order
    return balanced_count(order, cal, cfg.sub_nonmembers, lambda start: population_ids(
        sorted(start, key=rank.__getitem__), cfg.seed))


def balanced_count(order: list[str], calibration: frozenset[str], n: int,
                   held_out: Callable[[list[str]], set[str]] | None = None) -> int:
    """The shortest start of ``order``, at least ``n`` long, whose scored ids (all, or those
    not in ``held_out(start)``) hold ``n // 2`` of the calibration half and ``n // 2`` of the
    test half (all of ``order`` if none does)."""
    for i in range(n, len(order) + 1):
        start = order[:i]
        out = held_out(start) if held_out else set()
        cal = sum(pid in calibration for pid in start if pid not in out)
        if min(cal, i - len(out) - cal) >= n // 2:
            return i
    return len(order)


def blind_scores(texts: dict[str, str], members: set[str], seed: int
                 ) -> dict[str, dict[str, float]]:
    """The blind baselines (no model): each passage's out-of-fold probability of being a
    member under the bag-of-words classifier of :mod:`recitation.detect.blind` (1-2-grams,
    binary, logistic regression), and its length in characters."""
    import numpy as np

    from recitation.detect.blind import NGRAMS, PURPOSE, out_of_fold
    from recitation.errors import require

    ids = sorted(texts)
    sk_text = require("sklearn.feature_extraction.text", PURPOSE)
    x = sk_text.CountVectorizer(lowercase=True, binary=True, ngram_range=NGRAMS
                                ).fit_transform([texts[i] for i in ids])
    y = np.array([int(i in members) for i in ids])
    prob = out_of_fold(x, y, seed)
    return {"blind_bow": {i: float(v) for i, v in zip(ids, prob, strict=True)},
            "length_chars": {i: float(len(texts[i])) for i in ids}}


def save_scores(path: Path, res: OrganismScores) -> None:
    ids = [p["id"] for p in res.passages]
    doc = {"format": 2, "organism": res.name, "seed": res.seed, "dev": res.dev,
           "passages": res.passages, "costs": res.costs, "units": res.units,
           "scores": {m: [v.get(i) for i in ids] for m, v in sorted(res.scores.items())}}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)


def load_scores(path: Path) -> OrganismScores:
    """One organism's stored records (:func:`save_scores`; gzip where the name ends
    ``.gz``: a kept copy, :func:`keep_records`)."""
    import gzip

    try:
        raw = path.read_bytes()
        doc = json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"bench claims: no readable records at {path} ({exc}); run "
                          "`recitation bench claims` without --analyse-only first") from exc
    ids = [p["id"] for p in doc["passages"]]
    scores = {m: {i: float(v) for i, v in zip(ids, vals, strict=True) if v is not None}
              for m, vals in doc["scores"].items()}
    costs = doc.get("costs", [])
    # format 1 kept no units: those with a cost row, their weights unrecorded
    units = doc.get("units") or {c["unit"]: {} for c in costs if c["unit"] != "organism"}
    return OrganismScores(doc["organism"], doc["seed"], doc["dev"], doc["passages"], scores,
                          costs, units)


def measure_all(cfg: ClaimsConfig, out: Path, *, progress: Progress | None = None,
                run: bool = True, keep: Path | None = None) -> list[OrganismScores]:
    """Every organism's records, the development one first (module docstring), each
    organism's one-pass units, then its late ones, before the next organism's. With
    ``run=False``, the organisms whose records are written (a run stopped part-way: the
    tables then say how many test organisms they rest on). ``keep``: a folder (in the
    repository, say) that keeps a compressed copy of every organism's records as they are
    written and gives them back to a fresh ``out``, so a run resumes on another machine."""
    if keep is not None:
        from recitation.bench.claims_camia import restore_signs

        restore_kept(cfg, out, keep, progress)
        restore_signs(organism_name(cfg, cfg.dev_seed, True), out, keep, progress)
    first = tuple(u for u in cfg.units if u not in LATE_UNITS)
    found = []
    for seed, dev in organisms(cfg):
        name = organism_name(cfg, seed, dev)
        if run:
            for units in ((first, None) if first else (None,)):
                res = measure_organism(cfg, seed, dev, out, progress=progress, units=units,
                                       keep=keep)
            found.append(res)
            if dev:  # camia@published's signs while the development organism is built here
                settle_signs(cfg, out, keep, progress)
        elif (out / name / RECORDS).exists():
            found.append(load_scores(out / name / RECORDS))
        elif progress:
            progress(f"{name}: no records yet, left out")
    if not any(o.dev for o in found) or all(o.dev for o in found):
        raise ConfigError(f"bench claims: {out} holds no records of the development organism "
                          "and at least one test organism; run `recitation bench claims` "
                          "(it resumes where it stopped)")
    return found


KEPT_SUFFIX = ".json.gz"


def keep_records(path: Path, kept: Path) -> None:
    """A gzip copy of the records at ``path`` (no timestamp in it: the same records make
    the same bytes, so a repository sees no change where nothing changed)."""
    import gzip

    kept.parent.mkdir(parents=True, exist_ok=True)
    tmp = kept.with_name(kept.name + ".tmp")
    tmp.write_bytes(gzip.compress(path.read_bytes(), mtime=0))
    tmp.replace(kept)


def restore_kept(cfg: ClaimsConfig, out: Path, keep: Path, progress: Progress | None) -> None:
    """Give each organism's kept records back to ``out`` where they hold more units than
    the records there (none, on a fresh machine)."""
    for seed, dev in organisms(cfg):
        name = organism_name(cfg, seed, dev)
        src, dst = keep / f"{name}{KEPT_SUFFIX}", out / name / RECORDS
        if not src.exists():
            continue
        kept = load_scores(src)
        if dst.exists() and set(kept.units) <= set(load_scores(dst).units):
            continue
        save_scores(dst, kept)
        if progress:
            progress(f"{name}: records restored from {src} ({', '.join(kept.units)})")
