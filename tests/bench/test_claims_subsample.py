"""The claims benchmark's subsample measures 1% FPR (issue 49): its non-members go on in the
subsample's seeded order until each calibration half holds its share, checked against a
brute force over the public :func:`recitation.bench.groundtruth.subsample`."""

from __future__ import annotations

import random

import pytest

from recitation.bench.claims import supported
from recitation.bench.claims_run import balanced_count
from recitation.bench.groundtruth import subsample, subsample_order
from recitation.bench.lowfpr import calibration_half
from recitation.organism.data import Passage


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
