"""CAMIA (EMNLP 2025; the authors' util_features.py and run_ours_train_lr.py): its signals
on a hand-worked trajectory (values worked by hand from the authors' formulas, the
arithmetic checked with numpy), the copies of the repeated text, the p-values and their
mean, and the detect job on the quick organism."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recitation.detect.camia import DIRECTIONS, camia_score, signals_of
from recitation.detect.camia_signals import (
    approximate_entropy,
    base_signals,
    camia_signals,
    copies,
    count_above_pre,
    group_of,
    lz_complexity,
    repeated,
    slope,
)
from recitation.models.base import TokenScores

X = [-4.0, -2.5, -1.0, -3.0, -0.5, -0.2, -1.5, -0.1]
LABELS = [10, 11, 12, 11, 13, 10, 14, 15, 16]


def test_single_trajectory_signals_by_hand() -> None:
    """"full" drops the last value (-12.7 / 7); 200 and 300 take all 8 (-12.8 / 8); the
    diversity slices the ids from the first token (6 of 8, 7 of 9); count_mean is a count."""
    s = base_signals(X, LABELS)
    want = {"loss_full": -1.814286, "loss_200": -1.6, "ppl_full": 6.136691, "ppl_200": 4.953032,
            "token_diversity_full": 0.75, "token_diversity_200": 0.777778,
            "calibrated_loss_full": -2.419048, "calibrated_loss_200": -2.057143,
            "calibrated_ppl_full": 8.182255, "calibrated_ppl_200": 6.368185,
            "count_mean_full": 4, "count_mean_200": 5, "count_above_1": 0.5,
            "count_above_2": 0.625, "count_above_3": 0.875, "lz_3": 0.625, "lz_4": 0.625,
            "lz_5": 0.75}
    for k, v in want.items():
        assert s[k] == pytest.approx(v, abs=1e-6), k
    assert len(s) == 24


def test_trajectory_statistics_by_hand() -> None:
    # t = 1..7 above the mean of what precedes: yes, yes, no (-3 against -2.5), yes x4
    assert count_above_pre(X, 10**9) == pytest.approx(6 / 7)
    assert slope(X) == pytest.approx(18.6 / 42)  # sum (i - 3.5)(x_i + 1.6) / sum (i - 3.5)^2
    assert approximate_entropy(X) == 0.0  # N = 8 <= m + 1 = 9
    # m = 2: r = 0.8 * std = 1.070327; phi(2) = -1.433979, phi(3) = ln(1/6)
    assert approximate_entropy(X, m=2) == pytest.approx(0.357781, abs=1e-6)
    # bins of 3: symbols [0,1,2,0,2,2,1,2]; phrases 0, 1, 2, 02, 21 (a trailing 2 is known)
    assert lz_complexity(X, 3) == pytest.approx(5 / 8)


def test_copy_differences_by_hand() -> None:
    copy0 = X[1:]
    copy1 = [-0.3, -0.1, -0.4, -0.05, -0.02, -0.2, -0.01]
    a, b = base_signals(copy0, LABELS), base_signals(copy1, LABELS)
    assert a["loss_full"] - b["loss_full"] == pytest.approx(-1.45 + 0.178333, abs=1e-6)
    assert a["loss_200"] - b["loss_200"] == pytest.approx(-1.257143 + 0.154286, abs=1e-6)
    assert a["count_above_1"] - b["count_above_1"] == pytest.approx(4 / 7 - 1)  # -1 >= -1


def test_copies_found_in_the_repeated_ids() -> None:
    ids = [1, 2, 3, 4, 5]
    rep_ids = [1, 2, 3, 4, 5] + [9, 2, 3, 4, 5] * 5  # the join changes the first token
    rep_lp = [-float(i) for i in range(len(rep_ids) - 1)]
    got = copies(ids, rep_ids, rep_lp)  # pattern [3, 4, 5]: 6 occurrences, last 2 dropped
    assert len(got) == 4 and got[0] == rep_lp[1:4] and got[1] == rep_lp[6:9]
    # a first word split differently after a space: the pattern loses one more token
    rep2 = [1, 2, 3, 4, 5] + [9, 8, 3, 4, 5] * 5
    assert len(copies([1, 2, 7, 3, 4, 5], [1, 2, 7] + rep2[2:], rep_lp + [0.0])) == 4
    assert copies([1, 2, 3, 4, 5], [1, 2, 3, 4, 6] * 2, rep_lp[:9]) == []


def test_copies_of_a_text_ending_in_a_newline() -> None:
    """SmolLM2's tokenizer: '...altogether?"\n' ends in 'Ċ' (here 10), but repeated, the
    newline and the joining space are one token 'ĊĠ' (11) before ' talk': the whole pattern
    [3, 4, 10] occurs once (the last copy), so every leading trim fails; without the last
    token the pattern [3, 4] gives 6 occurrences, the last 2 dropped."""
    ids = [1, 2, 3, 4, 10]
    rep_ids = [1, 2, 3, 4, 11] + [9, 2, 3, 4, 11] * 4 + [9, 2, 3, 4, 10]
    rep_lp = [-float(i) for i in range(len(rep_ids) - 1)]
    got = copies(ids, rep_ids, rep_lp)
    assert got == [rep_lp[1:3], rep_lp[6:8], rep_lp[11:13], rep_lp[16:18]]


def test_all_75_signals_in_their_groups() -> None:
    x = [-(i % 7) * 0.5 - 0.1 for i in range(40)]
    ids = list(range(41))
    rep_ids = ids + [99] + ids[1:] + [99] + ids[1:] + [99] + ids[1:] + [99] + ids[1:]
    rep_lp = [-(i % 5) * 0.3 for i in range(len(rep_ids) - 1)]
    s = camia_signals(x, ids, rep_lp, rep_ids)
    assert len(s) == 75
    assert {group_of(k) for k in s} == set(DIRECTIONS)


def test_p_values_and_their_mean() -> None:
    """loss is negated (members have the higher log-probability): the population's
    oriented values are 1, 2, 3, 4. -0.5 -> 0.5: below all, p = 0. -2.5 -> 2.5: two below,
    none equal, p = (2 + 2) / 2 / 4 = 0.5. Two signals: the mean of their p-values."""
    pop = [{"loss_full": -v} for v in (1.0, 2.0, 3.0, 4.0)]
    assert camia_score({"loss_full": -0.5}, pop) == 0.0
    assert camia_score({"loss_full": -2.5}, pop) == pytest.approx(-0.5)
    # a tie: one below, two at or below: (1 + 2 + 1) / 2 / 4 (scipy's kind="rank")
    assert camia_score({"loss_full": -2.0}, pop) == pytest.approx(-(1 + 2 + 1) / 2 / 4)
    pop2 = [{"loss_full": -v, "lz_3": v} for v in (1.0, 2.0, 3.0, 4.0)]
    # lz kept (lower is member-like): 4.5 is above all, p = 1; mean (0 + 1) / 2
    assert camia_score({"loss_full": -0.5, "lz_3": 4.5}, pop2) == pytest.approx(-0.5)


def test_signals_of_token_scores_use_ids_or_tokens() -> None:
    text_ids = tuple(range(12))
    rep_ids = text_ids + sum(((50,) + text_ids[1:] for _ in range(5)), ())
    plain = TokenScores(tokens=tuple(map(str, text_ids)), logprobs=tuple(
        -0.1 * (i + 1) for i in range(11)), token_ids=text_ids)
    rep = TokenScores(tokens=tuple(map(str, rep_ids)), logprobs=tuple(
        -0.05 * (i % 9) for i in range(len(rep_ids) - 1)))
    assert len(signals_of(plain, rep)) == 75  # no ids for the repeated text: tokens for both


@pytest.mark.model
async def test_detect_job_on_the_organism(quick, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """At epoch 2 the quick organism's members stand out: every scored member above every
    scored non-member; 30% of the 15 non-members (4) calibrate and get no score."""
    from recitation.metrics.stats import roc_auc
    from recitation.models.local import LocalModel
    from recitation.organism.data import load_split
    from recitation.runs.jobs import make_job

    passages = load_split(quick.directory / "split.json")

    def jsonl(path: Path, rows: list[str]) -> str:
        path.write_text("".join(json.dumps({"text": t}) + "\n" for t in rows))
        return str(path)

    job = make_job("detect", {
        "members": [jsonl(tmp_path / "m.jsonl", [p.text for p in passages if p.dose])],
        "controls": [jsonl(tmp_path / "c.jsonl", [p.text for p in passages if not p.dose])],
        "detectors": ["camia"]}, 0)
    model = LocalModel("organism:quick:epoch2")
    recs = await job.run_items(job.items(), model)
    assert sum(1 for r in recs if r.get("camia_population")) == 4
    scored = [(r["sample"]["label"] == "member", s["score"]) for r in recs
              for s in r["scores"] if s["detector"] == "camia"]
    assert len(scored) == 26 and not [e for r in recs for e in r["errors"]]
    assert roc_auc([int(m) for m, _ in scored], [v for _, v in scored]) > 0.95
    # one member, again from its own scores and the population's
    first = recs[0]["sample"]["text"]
    plain, rep = await model.score([first, repeated(first)])
    pop = [r["sample"]["text"] for r in recs if r.get("camia_population")]
    got = await model.score(pop + [repeated(t) for t in pop])
    population = [signals_of(a, b) for a, b in zip(got[:4], got[4:], strict=True)]
    (mine,) = [s["score"] for s in recs[0]["scores"]]
    assert mine == pytest.approx(camia_score(signals_of(plain, rep), population), abs=1e-9)
