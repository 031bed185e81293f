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
  every call kept in the response cache, so a killed run resumes where it stopped, across
  sessions; the one-pass units (white-box, DC-PDD, EZ-MIA) on every organism first, ReCaLL
  after (each text again after a 192-token prefix, scored once per batch), the generating
  units (``generating``) last and on a seeded subsample. Float32 by default: about 0.25 s
  per scoring of a 64-token passage on a 2-core AMD EPYC without AVX-512
  (docs/leaderboard.md). Blind baselines read no model: the
  bag-of-words classifier of :mod:`recitation.detect.blind` (out of fold, Das et al. 2024)
  and the passage's length.
* **Records.** Per organism ``OUT/<organism>/claims-scores.json``: each passage (id, dose,
  calibration or test half) and each score; :mod:`recitation.bench.claims_analysis` reads
  only these.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from recitation.bench.lowfpr import calibration_half
from recitation.errors import ConfigError

SCORE_UNITS = ("whitebox", "dcpdd", "ezmia", "recall")
LATE_UNITS = ("recall",)
"""Run on every organism after the others: ReCaLL scores each text again after a prefix,
where the others read the white-box unit's scorings, so a run stopped part-way has every
one-pass score of as many organisms as possible."""
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
    # a seeded stratified subsample of each organism: members per dose, non-members
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
                     units: tuple[str, ...] | None = None) -> OrganismScores:
    """Build (or reuse) one organism, run (or reuse) its score units and write its records;
    ``run=False`` reads the records already written."""
    name = organism_name(cfg, seed, dev)
    folder = out / name
    if not run:
        return load_scores(folder / RECORDS)
    from recitation.bench.analysis import cost_row, detector_scores
    from recitation.bench.groundtruth import LOWFPR, run_units
    from recitation.organism.build import build_organism

    t0 = time.perf_counter()
    built = build_organism(organism_config(cfg, seed, dev))
    if progress:
        progress(f"{name}: {'reused' if built.reused else 'built'} ({built.directory})")
    generating = tuple(u for u in cfg.generating if not (dev and u == PUBLISHED_CAMIA))
    gt = LOWFPR.model_copy(update={
        "organism": name, "units": cfg.units + generating if units is None else units,
        "dtype": cfg.dtype, **({} if dev else camia_signs(cfg, out)),
        "signals": True, "seed": cfg.seed, "n_bootstrap": 0, "batch_size": cfg.batch_size,
        "subsample_units": cfg.generating + cfg.subsampled,
        "subsample_members": cfg.sub_members, "subsample_nonmembers": cfg.sub_nonmembers,
        **shared_reference(cfg, name, out)})
    measured = run_units(gt, folder, progress=progress)
    scores: dict[str, dict[str, float]] = {}
    for o in measured.outcomes:
        scores |= detector_scores(o)
    texts = {p.id: p.text for p in measured.passages}
    members = {p.id for p in measured.passages if p.member}
    scores |= blind_scores(texts, members, cfg.seed)
    cal = calibration_half((p.id for p in measured.passages if not p.member), cfg.seed)
    res = OrganismScores(name, seed, dev, [
        {"id": p.id, "dose": p.dose, "calibration": p.id in cal} for p in measured.passages],
        scores, [cost_row(o) for o in measured.outcomes]
        + [{"unit": "organism", "built": not built.reused,
            "wall_seconds": round(time.perf_counter() - t0, 1)}])
    save_scores(folder / RECORDS, res)
    return res


PUBLISHED_CAMIA = "camia@published"
"""Not run on the development organism: its labels fix the signs the test organisms use."""


def camia_signs(cfg: ClaimsConfig, out: Path) -> dict[str, Any]:
    """``{"camia_signs": ...}`` when ``camia@published`` is among the generating units: the
    per-key signs measured on the development organism's subsample
    (:mod:`recitation.bench.claims_camia`), else nothing."""
    if PUBLISHED_CAMIA not in cfg.generating:
        return {}
    from recitation.bench.claims_camia import SIGNS, development_signs
    from recitation.bench.groundtruth import subsample
    from recitation.organism.data import load_split
    from recitation.organism.paths import SPLIT, organism_dir

    name = organism_name(cfg, cfg.dev_seed, True)
    passages = subsample(load_split(organism_dir(name) / SPLIT), cfg.sub_members,
                         cfg.sub_nonmembers, cfg.seed)
    signs = development_signs(name, 1, [(p.text, p.member) for p in passages],
                              out / name / SIGNS, cfg.dtype)
    return {"camia_signs": signs}


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
    doc = {"format": 1, "organism": res.name, "seed": res.seed, "dev": res.dev,
           "passages": res.passages, "costs": res.costs,
           "scores": {m: [v.get(i) for i in ids] for m, v in sorted(res.scores.items())}}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)


def load_scores(path: Path) -> OrganismScores:
    """One organism's stored records (:func:`save_scores`)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"bench claims: no readable records at {path} ({exc}); run "
                          "`recitation bench claims` without --analyse-only first") from exc
    ids = [p["id"] for p in doc["passages"]]
    scores = {m: {i: float(v) for i, v in zip(ids, vals, strict=True) if v is not None}
              for m, vals in doc["scores"].items()}
    return OrganismScores(doc["organism"], doc["seed"], doc["dev"], doc["passages"], scores,
                          doc.get("costs", []))


def measure_all(cfg: ClaimsConfig, out: Path, *, progress: Progress | None = None,
                run: bool = True) -> list[OrganismScores]:
    """Every organism's records, the development one first (module docstring). With
    ``run=False``, the organisms whose records are written (a run stopped part-way: the
    tables then say how many test organisms they rest on)."""
    first = tuple(u for u in cfg.units if u not in LATE_UNITS)
    if run and first:  # the one-pass units on every organism first, then the rest
        for seed, dev in organisms(cfg):
            measure_organism(cfg, seed, dev, out, progress=progress, units=first)
    # else the records just written are the whole run
    late = run and (first != cfg.units or bool(cfg.generating))
    found = []
    for seed, dev in organisms(cfg):
        path = out / organism_name(cfg, seed, dev) / RECORDS
        if not late and not path.exists():
            if progress:
                progress(f"{organism_name(cfg, seed, dev)}: no records yet, left out")
            continue
        found.append(measure_organism(cfg, seed, dev, out, progress=progress, run=late))
    if not any(o.dev for o in found) or all(o.dev for o in found):
        raise ConfigError(f"bench claims: {out} holds no records of the development organism "
                          "and at least one test organism; run `recitation bench claims` "
                          "(it resumes where it stopped)")
    return found
