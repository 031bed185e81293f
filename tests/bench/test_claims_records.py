"""The claims benchmark's published figures recomputed from its kept records (issue 49):
``benchmarks/mia_claims/<organism>.json.gz`` (each passage's dose, calibration half and
scores, written by ``recitation bench claims --keep``) against ``benchmarks/mia_claims.json``
(the analysis the docs' tables are written from).

Independent references: the conformal threshold as the split-conformal p-value (a member is
flagged when (1 + #{calibration >= x}) / (n + 1) <= alpha, counted by brute force), the
paired test as scipy's exact binomial test on the discordant members, Holm as statsmodels',
and one organism's TPR interval as scipy's percentile bootstrap of the same two-sample
resampling."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

ROOT = Path(__file__).resolve().parents[2]
ANALYSIS = ROOT / "benchmarks" / "mia_claims.json"
KEPT = ROOT / "benchmarks" / "mia_claims"


@pytest.fixture(scope="module")
def res() -> dict[str, Any]:
    return json.loads(ANALYSIS.read_text(encoding="utf-8"))


def records(name: str) -> dict[str, Any]:
    return json.loads(gzip.decompress((KEPT / f"{name}.json.gz").read_bytes()))


def the_pair(res: dict[str, Any]) -> dict[str, Any]:
    """The first pair compared at 1% FPR on every member."""
    return next(p for p in res["pairs"] if p["alpha"] == 0.01 and p["dose"] == "all")


def columns(doc: dict[str, Any], method: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A method's scores (NaN: unscored), each passage's dose, and the calibration half."""
    v = np.array([np.nan if x is None else x for x in doc["scores"][method]], dtype=float)
    return (v, np.array([p["dose"] for p in doc["passages"]]),
            np.array([p["calibration"] for p in doc["passages"]]))


def scored_counts(doc: dict[str, Any], method: str) -> tuple[int, int, int]:
    """The calibration and test non-members and the members a method scored."""
    v, dose, cal_half = columns(doc, method)
    scored = (dose == 0) & ~np.isnan(v)
    return (int((scored & cal_half).sum()), int((scored & ~cal_half).sum()),
            int(((dose > 0) & ~np.isnan(v)).sum()))


def member_flags(doc: dict[str, Any], method: str, alpha: float) -> tuple[np.ndarray, int]:
    """Every member's flag under the conformal p-value rule (unscored: not flagged), and the
    test non-members flagged."""
    v, dose, cal_half = columns(doc, method)
    cal = v[(dose == 0) & cal_half & ~np.isnan(v)]

    def flagged(x: np.ndarray) -> np.ndarray:
        above = (cal[None, :] >= x[:, None]).sum(axis=1)
        return ~np.isnan(x) & ((1 + above) / (cal.size + 1) <= alpha)

    test = v[(dose == 0) & ~cal_half & ~np.isnan(v)]
    return flagged(v[dose > 0]), int(flagged(test).sum())


def test_the_kept_records_are_the_organisms_analysed(res: dict[str, Any]) -> None:
    for org in res["organisms"]:
        doc = records(org["name"])
        dose = [p["dose"] for p in doc["passages"]]
        cal = [p["calibration"] for p in doc["passages"] if p["dose"] == 0]
        assert (sum(d > 0 for d in dose), sum(cal), len(cal) - sum(cal)) == (
            org["members"], org["calibration"], org["test"])


def test_each_organisms_flags_follow_the_conformal_p_value(res: dict[str, Any]) -> None:
    pair = the_pair(res)
    for method in (pair["a"], pair["b"]):
        row = next(r for r in res["rows"] if r["method"] == method and r["dose"] == "all"
                   and r["alpha"] == 0.01)
        for org in row["organisms"]:
            flags, fp = member_flags(records(org["organism"]), method, 0.01)
            assert (int(flags.sum()), fp) == (org["tp"], org["fp"]), (method, org["organism"])


def test_the_paired_test_is_the_exact_binomial_on_discordant_members(
        res: dict[str, Any]) -> None:
    pair = the_pair(res)
    only_a = only_b = 0
    tests = [o["name"] for o in res["organisms"] if not o["dev"]]
    for name in tests:
        doc = records(name)
        a, _ = member_flags(doc, pair["a"], 0.01)
        b, _ = member_flags(doc, pair["b"], 0.01)
        only_a += int((a & ~b).sum())
        only_b += int((b & ~a).sum())
    assert (only_a, only_b) == (pair["only_a"], pair["only_b"])
    p = 1.0 if only_a + only_b == 0 else stats.binomtest(only_a, only_a + only_b).pvalue
    assert pair["p"] == pytest.approx(p, rel=1e-9)
    holm = multipletests([q["p"] for q in res["pairs"]], method="holm")[1]
    assert [q["p_holm"] for q in res["pairs"]] == pytest.approx(list(holm))


def test_one_interval_equals_scipys_bootstrap_of_the_same_resampling(
        res: dict[str, Any]) -> None:
    """The first test organism's TPR interval of the pair's first method: members and
    calibration non-members resampled apart, the threshold recomputed in each resample."""
    method = the_pair(res)["a"]
    row = next(r for r in res["rows"] if r["method"] == method and r["dose"] == "all"
               and r["alpha"] == 0.01)
    org = row["organisms"][0]
    v, dose, cal_half = columns(records(org["organism"]), method)
    pos = v[(dose > 0) & ~np.isnan(v)]
    cal = v[(dose == 0) & cal_half & ~np.isnan(v)]
    k = math.ceil((cal.size + 1) * 0.99)

    def tpr(p: np.ndarray, c: np.ndarray) -> float:
        return float(np.mean(p > np.partition(c, k - 1)[k - 1]))

    ref = stats.bootstrap((pos, cal), tpr, paired=False, vectorized=False, n_resamples=2000,
                          method="percentile", random_state=1).confidence_interval
    assert org["tpr_ci"] == pytest.approx([ref.low, ref.high], abs=0.03)


def test_the_leaderboards_pearl_sentences_are_the_records(res: dict[str, Any]) -> None:
    """The prose under the tables on PEARL quotes its kept records: the halves its 1,000
    non-members fall in (counted here from each test organism's records), its pooled TPR and
    FPR read at 1% and the above-chance p (from the analysis)."""
    doc = " ".join((ROOT / "docs" / "leaderboard.md").read_text(encoding="utf-8").split())
    for name in ("claims-s0", "claims-s1", "claims-s2"):
        v, dose, cal_half = columns(records(name), "pearl_bitflip_sensitivity")
        scored = (dose == 0) & ~np.isnan(v)
        assert (int((scored & cal_half).sum()), int((scored & ~cal_half).sum())) == (512, 488)
    assert "fall 512 in the calibration half and 488 in the test half" in doc
    rows = [r for r in res["rows"] if r["method"].startswith("pearl") and r["alpha"] == 0.01]
    assert {r["supported"] for r in rows} == {False} and len(rows) == 6

    def pct(x: float) -> str:
        return f"{100 * x:.1f}"

    tpr = f"pooled TPR {pct(min(r['tpr'] for r in rows))}-{pct(max(r['tpr'] for r in rows))}%"
    fpr = f"FPR read of {pct(min(r['fpr'] for r in rows))}-{pct(max(r['fpr'] for r in rows))}%"
    p = [r["p_above_chance_holm"] for r in rows]
    assert tpr in doc and fpr in doc and f"Holm p {min(p):.2f}-{max(p):.2f}" in doc


def test_the_leaderboards_camia_sentences_are_the_records(res: dict[str, Any]) -> None:
    """The prose on CAMIA quotes its kept records: the non-members it scored in each half
    (counted here: its population has no score), the one member without a score, its pooled
    rate, FPR read and above-chance p at 1%, the seen-once verdict and the pairs compared."""
    doc = " ".join((ROOT / "docs" / "leaderboard.md").read_text(encoding="utf-8").split())
    members = {}
    for name in ("claims-dev", "claims-s0", "claims-s1", "claims-s2"):
        v, dose, cal_half = columns(records(name), "camia")
        scored = (dose == 0) & ~np.isnan(v)
        halves = (int((scored & cal_half).sum()), int((scored & ~cal_half).sum()))
        assert halves == ((358, 342) if name == "claims-dev" else (503, 502))
        members[name] = int(((dose > 0) & ~np.isnan(v)).sum())  # 100 per dose in the subsample
    assert members == {"claims-dev": 200, "claims-s0": 200, "claims-s1": 199, "claims-s2": 200}
    assert "503 in the calibration half and 502 in the test half" in doc
    assert "(the development organism: all 1,000, 358 / 342 scored)" in doc
    every, once = (next(r for r in res["rows"] if r["method"] == "camia"
                        and r["alpha"] == 0.01 and r["dose"] == d) for d in ("all", "1"))
    lo, hi = (100 * x for x in every["tpr_ci"])
    assert (f"CAMIA flags {100 * every['tpr']:.1f}% [{lo:.1f}, {hi:.1f}] of every member pooled "
            f"against an FPR read of {100 * every['fpr']:.1f}%") in doc
    assert every["p_above_chance_holm"] < 0.001 and "(Holm p < 0.001)" in doc
    verdict = next(v for v in res["verdicts"] if v["alpha"] == 0.01 and v["dose"] == "1"
                   and v["access"] == "log-probabilities")
    assert verdict["best"] == "camia" and verdict["winner"] is None
    assert f"seen once it has the highest rate of its level, {100 * once['tpr']:.1f}%" in doc
    assert f"the Holm family to {len(res['pairs'])} pairs" in doc


def test_each_rows_scored_counts_are_the_records(res: dict[str, Any]) -> None:
    """The tables' "scored" column: members and calibration / test non-members with a score,
    summed over the test organisms and counted here from the kept records (a generating
    unit's subsample; CAMIA's less its population; PEARL's 1,000 non-members)."""
    from recitation.bench.claims_tables import rate_table

    lines = rate_table(res, "all", 0.01)
    for method in ("camia", "pearl_bitflip_sensitivity", "zlib", "ezmia"):
        counts = np.zeros(3, dtype=int)
        for name in ("claims-s0", "claims-s1", "claims-s2"):
            v, dose, cal_half = columns(records(name), method)
            ok = ~np.isnan(v)
            counts += [int((ok & (dose > 0)).sum()), int((ok & (dose == 0) & cal_half).sum()),
                       int((ok & (dose == 0) & ~cal_half).sum())]
        want = " / ".join(f"{c:,}" for c in counts)
        assert any(f" | `{method}` | {want} | " in line for line in lines), (method, want)


def test_the_leaderboards_samia_sentences_are_the_records(res: dict[str, Any]) -> None:
    """The prose on SaMIA quotes its kept records: the non-members it scored in each half of
    each test organism (counted here), its pooled rate, FPR read and above-chance p at 1%
    and its level's verdict (from the analysis)."""
    doc = " ".join((ROOT / "docs" / "leaderboard.md").read_text(encoding="utf-8").split())
    for name in ("claims-s0", "claims-s1", "claims-s2"):
        assert scored_counts(records(name), "samia") == (520, 500, 200), name
    assert "200 members and 1,020 non-members on each test organism, 520 in the calibration " \
        "half and 500 in the test half" in doc
    every = next(r for r in res["rows"] if r["method"] == "samia" and r["alpha"] == 0.01
                 and r["dose"] == "all")
    lo, hi = (100 * x for x in every["tpr_ci"])
    flo, fhi = (100 * x for x in every["fpr_ci"])
    assert (f"SaMIA flags {100 * every['tpr']:.1f}% [{lo:.1f}, {hi:.1f}] of every member "
            f"pooled against an FPR read of {100 * every['fpr']:.1f}% [{flo:.1f}, {fhi:.1f}]"
            ) in doc
    assert f"(Holm p {every['p_above_chance_holm']:.3f})" in doc
    verdict = next(v for v in res["verdicts"] if v["alpha"] == 0.01 and v["dose"] == "all"
                   and v["access"] == "black-box text")
    assert verdict["best"] == "samia" and verdict["winner"] is None and verdict["methods"] == 1


def test_the_published_samia_cost_is_its_record() -> None:
    """The leaderboard's sentence on what SaMIA's published setting generates quotes
    ``benchmarks/samia_published_cost.json``: every continuation ran to the cap its request
    set (1,024 tokens less the prompt's estimate: never ended early), the range of new
    tokens and the rate over the wall time."""
    rec = json.loads((ROOT / "benchmarks" / "samia_published_cost.json").read_text("utf-8"))
    new, cap = rec["new_tokens"], rec["cap"]
    assert len(new) == len(cap) == rec["continuations"] == 10 * len(rec["texts"])
    assert new == cap and rec["finish"] == {"length": len(new)}
    assert all(c <= 1024 for c in cap)
    assert math.isclose(rec["tokens_per_second"], sum(new) / rec["wall_seconds"], rel_tol=1e-3)
    doc = " ".join((ROOT / "docs" / "leaderboard.md").read_text(encoding="utf-8").split())
    n = len(new)
    assert (f"{n} of {n} sampled continuations of {len(rec['texts'])} `claims-dev` texts "
            f"({len(rec['texts']) // 2} members, {len(rec['texts']) // 2} non-members) ran to "
            f"their cap, {min(new)}-{max(new)} new tokens") in doc
    assert rec["threads"] == 1
    assert f"{rec['tokens_per_second']} tokens a second on one thread" in doc


def test_the_leaderboards_neighbourhood_sentences_are_the_records(res: dict[str, Any]
                                                                 ) -> None:
    """The prose on the neighbourhood attack quotes its kept records: the texts it scored in
    each half of each test organism (counted here), each organism's wall time, its pooled
    rate, FPR read and above-chance p at 1%, its level's verdict with the McNemar counts
    against the best method, and the pairs compared (from the analysis)."""
    doc = " ".join((ROOT / "docs" / "leaderboard.md").read_text(encoding="utf-8").split())
    for name in ("claims-s0", "claims-s1", "claims-s2"):
        assert scored_counts(records(name), "neighbourhood") == (520, 500, 200), name
    costs = [c for name in ("claims-dev", "claims-s0", "claims-s1", "claims-s2")
             for c in records(name)["costs"] if c["unit"] == "neighbourhood"]
    assert len(costs) == 4
    seconds = sorted(round(c["wall_seconds"]) for c in costs)
    assert f"{seconds[0]:,}-{seconds[-1]:,} s per organism" in doc
    every = next(r for r in res["rows"] if r["method"] == "neighbourhood"
                 and r["alpha"] == 0.01 and r["dose"] == "all")
    lo, hi = (100 * x for x in every["tpr_ci"])
    assert (f"the neighbourhood attack flags {100 * every['tpr']:.1f}% [{lo:.1f}, {hi:.1f}] of "
            f"every member pooled against an FPR read of {100 * every['fpr']:.1f}%") in doc
    p = every["p_above_chance_holm"]
    assert ("(Holm p < 0.001)" if p < 0.001 else f"(Holm p {p:.3f})") in doc
    assert f"the Holm family to {len(res['pairs'])} pairs" in doc
    verdict = next(v for v in res["verdicts"] if v["alpha"] == 0.01 and v["dose"] == "all"
                   and v["access"] == "log-probabilities")
    assert verdict["winner"] is None and "neighbourhood" in verdict["tied"]
    pair = next(p for p in res["pairs"] if p["alpha"] == 0.01 and p["dose"] == "all"
                and {p["a"], p["b"]} == {verdict["best"], "neighbourhood"})
    best, nb = ((pair["only_a"], pair["only_b"]) if pair["a"] == verdict["best"]
                else (pair["only_b"], pair["only_a"]))
    assert (f"(`{verdict['best']}`, {100 * verdict['tpr']:.1f}%; McNemar {best} members flagged "
            f"by `{verdict['best']}` alone against {nb} by the neighbourhood attack alone, Holm "
            f"p {pair['p_holm']:.3f})") in doc
