"""The claims benchmark's subsample measures 1% FPR (issue 49): its non-members go on in the
subsample's seeded order until each calibration half holds its share, checked against a
brute force over the public :func:`recitation.bench.groundtruth.subsample`."""

from __future__ import annotations

import hashlib
import random
from dataclasses import replace
from pathlib import Path

import pytest

from recitation.bench.claims import supported
from recitation.bench.claims_run import ClaimsConfig, balanced_count, subsample_nonmembers
from recitation.bench.groundtruth import LOWFPR, sample_files, subsample, subsample_order
from recitation.bench.lowfpr import calibration_half
from recitation.detect.camia import CamiaDetector
from recitation.detect.samples import Sample, load_samples
from recitation.organism.data import Passage, save_split
from recitation.organism.paths import SPLIT, organism_dir


def passages(n_members: int, n_nonmembers: int) -> list[Passage]:
    def one(i: int, dose: int) -> Passage:
        return Passage(id=f"N@{i}", novel="N", start=i, end=i + 1, n_tokens=1, sha256="",
                       member=dose > 0, dose=dose, text=f"text {i}")
    return [one(i, 0) for i in range(n_nonmembers)] + [
        one(n_nonmembers + i, 1 + i % 2) for i in range(n_members)]


def halves(ps: list[Passage], n: int, seed: int) -> tuple[int, int]:
    """(calibration, test) non-members of ``subsample(ps, 5, n, seed)``, the halves drawn
    over all of ``ps``'s non-members as the benchmark draws them."""
    cal = calibration_half((p.id for p in ps if not p.member), seed)
    few = [p for p in subsample(ps, 5, n, seed) if not p.member]
    inside = sum(p.id in cal for p in few)
    return inside, len(few) - inside


@pytest.mark.parametrize("seed", range(12))
def test_the_count_is_the_smallest_that_gives_each_half_its_share(seed: int) -> None:
    rng = random.Random(seed)
    ps = passages(20, rng.randint(60, 200))
    n = rng.choice([10, 20, 31, 40])
    cal = calibration_half((p.id for p in ps if not p.member), seed)
    got = balanced_count(subsample_order(ps, 0, seed), cal, n)
    total = sum(not p.member for p in ps)
    brute = next((m for m in range(n, total + 1) if min(halves(ps, m, seed)) >= n // 2), total)
    assert got == brute
    # nested: a larger count keeps every non-member a smaller one took (scores already
    # recorded stay on the subsample)
    small = {p.id for p in subsample(ps, 5, n, seed)}
    assert small <= {p.id for p in subsample(ps, 5, got, seed)}


def test_a_plain_count_can_leave_a_test_half_that_does_not_measure_one_percent() -> None:
    """1,000 of 10,000 non-members, split by halves drawn over all of them: some seeds leave
    fewer than 500 in the test half (1% FPR not measured); the balanced count never does."""
    ps = passages(10, 10_000)
    short = 0
    for seed in range(8):
        plain = halves(ps, 1000, seed)
        short += not supported(0.01, *plain)
        cal = calibration_half((p.id for p in ps if not p.member), seed)
        n = balanced_count(subsample_order(ps, 0, seed), cal, 1000)
        assert n >= 1000 and supported(0.01, *halves(ps, n, seed))
    assert short > 0


class _Job:
    """What CAMIA's population reads of its detect job: the seed and the samples."""

    def __init__(self, samples: list[Sample], seed: int) -> None:
        self._samples, self.seed = samples, seed

    def samples(self) -> list[Sample]:
        return self._samples


def camia_halves(ps: list[Passage], n: int, seed: int, tmp: Path) -> tuple[int, int]:
    """(calibration, test) non-members that CAMIA scores on a subsample of ``n``: the
    benchmark's sample files, loaded as the detect job loads them, less the population the
    detector itself draws."""
    cfg = LOWFPR.model_copy(update={"subsample_members": 5, "subsample_nonmembers": n,
                                    "seed": seed})
    files = sample_files(ps, tmp, cfg=cfg)
    controls = load_samples(str(files["nonmembers_sub"]), "control")
    pop = CamiaDetector().population(_Job(controls, seed))  # type: ignore[arg-type]
    cal = calibration_half((p.id for p in ps if not p.member), seed)
    scored = [s.id.split(":", 1)[1] for s in controls if s.id not in pop]
    inside = sum(pid in cal for pid in scored)
    return inside, len(scored) - inside


@pytest.mark.parametrize("seed", range(4))
def test_with_camia_the_count_gives_each_half_its_share_of_the_scored_70_percent(
        seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CAMIA scores none of the 30% it calibrates on: the subsample grows until the rest give
    each half ``n // 2`` (brute force: the smallest count that does, through the detector's
    own population on the files the job reads), and a plain count falls short of that."""
    monkeypatch.setenv("RECITATION_MODEL_CACHE_DIR", str(tmp_path / "models"))
    rng = random.Random(seed)
    ps = passages(10, rng.randint(150, 260))
    rng.shuffle(ps)  # the job takes the split's order, not the ids' order
    ps = [replace(p, sha256=hashlib.sha256(p.text.encode()).hexdigest()) for p in ps]
    cfg = ClaimsConfig(generating=("camia",), sub_nonmembers=rng.choice([20, 30, 40]),
                       seed=seed)
    organism_dir("toy").mkdir(parents=True)
    save_split(organism_dir("toy") / SPLIT, ps, {})
    got = subsample_nonmembers(cfg, "toy")
    n, total = cfg.sub_nonmembers, sum(not p.member for p in ps)
    brute = next(m for m in range(n, total + 1)
                 if min(camia_halves(ps, m, seed, tmp_path / str(m))) >= n // 2)
    assert got == brute > subsample_nonmembers(cfg.model_copy(update={"generating": ()}),
                                               "toy")
