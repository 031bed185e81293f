"""The claims benchmark's analysis (recitation.bench.claims_analysis) on synthetic records,
each figure against an independent reference: the conformal p-value definition, brute-force
hypergeometric tails, statsmodels' McNemar and Holm, scipy's bootstrap and binomtest."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from recitation.bench.claims_analysis import analyse, organism_rate
from recitation.bench.claims_run import OrganismScores, blind_scores
from recitation.bench.claims_tables import markdown
from recitation.bench.lowfpr import calibration_half

SHIFTS = {"loss": 1.0, "zlib": 1.0, "min_k_10": 0.2, "min_k_20": 1.5, "min_k_30": 0.4,
          "reference": 3.0, "ezmia": 0.3, "blind_bow": 0.0, "length_chars": 0.0}


def synthetic(seed: int, dev: bool, members: int = 150, nonmembers: int = 2000
              ) -> OrganismScores:
    """Members at doses 1 and 4, non-members; each score N(shift * dose / 4, 1) for members,
    N(0, 1) for non-members (loss and zlib: the same distribution, drawn apart)."""
    rng = np.random.default_rng(seed)
    passages = [{"id": f"m{seed}-{i}", "dose": 1 if i % 2 else 4} for i in range(members)]
    passages += [{"id": f"n{seed}-{i}", "dose": 0} for i in range(nonmembers)]
    cal = calibration_half((p["id"] for p in passages if p["dose"] == 0), 0)
    for p in passages:
        p["calibration"] = p["id"] in cal
    scores = {m: {p["id"]: float(rng.normal(shift * p["dose"] / 4, 1)) for p in passages}
              for m, shift in SHIFTS.items()}
    return OrganismScores(f"org{seed}", seed, dev, passages, scores, [])


@pytest.fixture(scope="module")
def orgs() -> list[OrganismScores]:
    return [synthetic(3, True)] + [synthetic(s, False) for s in (0, 1, 2)]


@pytest.fixture(scope="module")
def res(orgs: list[OrganismScores]) -> dict:
    return analyse(orgs, (0.01, 0.001), n_boot=400, seed=0)


def conformal_flags(members: list[float], calibration: list[float], alpha: float) -> list[bool]:
    """Split-conformal p-values, p(x) = (1 + #{cal >= x}) / (n + 1); flag when p <= alpha."""
    n = len(calibration)
    return [(1 + sum(c >= x for c in calibration)) / (n + 1) <= alpha for x in members]


def test_choices_come_from_the_development_organism_only(res: dict) -> None:
    assert res["development"]["organism"] == "org3"
    assert res["development"]["choices"]["min_k"] == "min_k_20"
    methods = {r["method"] for r in res["rows"]}
    assert "min_k_20" in methods and not methods & {"min_k_10", "min_k_30"}
    assert {"blind_bow", "length_chars"} <= methods


def test_rates_match_the_conformal_p_value_definition(orgs: list[OrganismScores],
                                                      res: dict) -> None:
    row = next(r for r in res["rows"] if r["method"] == "reference" and r["dose"] == "1"
               and r["alpha"] == 0.01)
    tp = fp = 0
    for org in orgs[1:]:
        v = org.scores["reference"]
        cal = [v[i] for i in org.nonmembers(True)]
        tp += sum(conformal_flags([v[i] for i in org.members("1")], cal, 0.01))
        fp += sum(conformal_flags([v[i] for i in org.nonmembers(False)], cal, 0.01))
    assert (row["tp"], row["n_members"], row["fp"], row["n_test"]) == (tp, 225, fp, 3000)
    ci = stats.binomtest(fp, 3000).proportion_ci(method="exact")
    assert row["fpr_ci"] == pytest.approx([ci.low, ci.high])
    assert row["tpr_min"] <= row["tpr_mean"] <= row["tpr_max"]
    assert row["tpr_ci"][0] <= row["tpr"] <= row["tpr_ci"][1]


def test_the_interval_equals_scipys_bootstrap_of_the_same_resampling(
        orgs: list[OrganismScores]) -> None:
    org = orgs[1]
    v = org.scores["min_k_20"]
    pos = np.array([v[i] for i in org.members("all")])
    cal = np.array([v[i] for i in org.nonmembers(True)])
    ours = organism_rate(org, "min_k_20", "all", 0.01, 2000, 7)["tpr_ci"]
    k = math.ceil((cal.size + 1) * 0.99)

    def tpr(p: np.ndarray, c: np.ndarray) -> float:
        return float(np.mean(p > np.sort(c)[k - 1]))

    ref = stats.bootstrap((pos, cal), tpr, paired=False, vectorized=False, n_resamples=2000,
                          method="percentile", random_state=1).confidence_interval
    assert ours == pytest.approx([ref.low, ref.high], abs=0.03)


def test_above_chance_is_the_hypergeometric_tail(res: dict) -> None:
    row = next(r for r in res["rows"] if r["method"] == "ezmia" and r["dose"] == "4"
               and r["alpha"] == 0.01)
    a, n, c, m = row["tp"], row["n_members"], row["fp"], row["n_test"]
    total, flagged = n + m, a + c
    tail = sum(math.comb(n, x) * math.comb(m, flagged - x)
               for x in range(a, min(n, flagged) + 1)) / math.comb(total, flagged)
    assert row["p_above_chance"] == pytest.approx(tail, rel=1e-9)


def test_pairs_are_mcnemar_on_the_same_members_corrected_by_holm(res: dict) -> None:
    pairs = res["pairs"]
    assert pairs and all(p["access"] != "none (blind baseline)" for p in pairs)
    for p in pairs:
        table = [[0, p["only_a"]], [p["only_b"], 0]]
        assert p["p"] == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-9)
    adjusted = multipletests([p["p"] for p in pairs], method="holm")[1]
    assert [p["p_holm"] for p in pairs] == pytest.approx(list(adjusted))


def test_a_clear_leader_wins_and_equals_tie(res: dict) -> None:
    def verdict(access: str, dose: str) -> dict:
        return next(v for v in res["verdicts"] if v["access"] == access and v["dose"] == dose
                    and v["alpha"] == 0.01)
    ref = verdict("reference model", "4")
    assert ref["winner"] == "reference" and ref["tied"] == []
    logp = verdict("log-probabilities", "1")  # loss and zlib: the same distribution
    assert logp["winner"] is None
    assert {logp["best"], *logp["tied"]} >= {"loss", "zlib"}


def test_only_measured_fprs_are_ranked(res: dict) -> None:
    """1,000 calibration / 1,000 test non-members measure 1% but not 0.1%."""
    assert all(r["supported"] == (r["alpha"] == 0.01) for r in res["rows"])
    assert {v["alpha"] for v in res["verdicts"]} == {0.01}
    md = markdown(res)
    assert "not ranked (FPR not measured)" in md and "**winner**" in md
    assert "| `org0` | test | 150 | 1,000 | 1,000 | 1% |" in md


def test_the_blind_bag_of_words_sees_a_telling_word_and_nothing_else() -> None:
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(300)]

    def text(extra: str = "") -> str:
        return " ".join(rng.choice(words, 30)) + extra

    texts = {f"p{i}": text(" zebra" if i < 100 else "") for i in range(300)}
    telling = blind_scores(texts, {f"p{i}" for i in range(100)}, 0)["blind_bow"]
    plain = blind_scores({k: text() for k in texts}, {f"p{i}" for i in range(100)},
                         0)["blind_bow"]
    ids = sorted(texts)
    member = [int(k[1:]) < 100 for k in ids]
    yes = [telling[k] for k, m in zip(ids, member, strict=True) if m]
    no = [telling[k] for k, m in zip(ids, member, strict=True) if not m]
    assert stats.mannwhitneyu(yes, no).pvalue < 1e-10
    auc = np.mean([a > b for a in (plain[k] for k, m in zip(ids, member, strict=True) if m)
                   for b in (plain[k] for k, m in zip(ids, member, strict=True) if not m)])
    assert 0.35 < auc < 0.65


def test_a_winner_needs_the_holm_adjusted_p_not_the_raw_one() -> None:
    from recitation.bench.claims_analysis import verdicts

    rows = [{"method": m, "access": "log-probabilities", "dose": "all", "alpha": 0.01,
             "supported": True, "tpr": t} for m, t in (("loss", 0.2), ("zlib", 0.1))]
    pair = {"access": "log-probabilities", "dose": "all", "alpha": 0.01, "a": "loss",
            "b": "zlib", "p": 0.03}
    assert verdicts(rows, [pair | {"p_holm": 0.09}])[0] == {
        "access": "log-probabilities", "dose": "all", "alpha": 0.01, "best": "loss",
        "tpr": 0.2, "winner": None, "tied": ["zlib"], "methods": 2, "p_holm_max": 0.09}
    assert verdicts(rows, [pair | {"p_holm": 0.04}])[0]["winner"] == "loss"


def test_a_published_setting_is_a_method_of_its_own() -> None:
    """Scores of a published-setting unit (``@published``) keep their suffix: their variant
    is chosen on the development organism apart from the default's, and they are ranked as
    a method of their own at the access of their detector."""
    from recitation.bench.claims_analysis import access_of, candidates, dev_choices

    orgs = [synthetic(3, True, nonmembers=400)] + [synthetic(0, False, nonmembers=400)]
    rng = np.random.default_rng(5)
    for org in orgs:
        for name, shift in (("samia", 0.2), ("samia_zlib", 0.1), ("samia@published", 0.1),
                            ("samia_zlib@published", 2.0)):
            org.scores[name] = {p["id"]: float(rng.normal(shift * p["dose"], 1))
                                for p in org.passages}
    chosen, rows = dev_choices(orgs[0])
    assert chosen["samia"] in ("samia", "samia_zlib")
    assert chosen["samia@published"] == "samia_zlib@published"
    picked = candidates(orgs[0], orgs[1:], chosen)
    assert "samia_zlib@published" in picked and "samia@published" not in picked
    assert access_of("samia_zlib@published") == access_of("samia") == "black-box text"
