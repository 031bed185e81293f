"""CAMIA (EMNLP 2025; the authors' util_features.py and run_ours_train_lr.py): its signals
on a hand-worked trajectory (values worked by hand from the authors' formulas, the
arithmetic checked with numpy), the copies of the repeated text, the p-values and their
mean, and the detect job on the quick organism."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recitation.detect.camia import (
    DIRECTIONS,
    camia_score,
    check_signs,
    signals_of,
    signs_by_label,
)
from recitation.detect.camia_signals import (
    KEYS,
    approximate_entropy,
    base_signals,
    camia_signals,
    copies,
    count_above_pre,
    group_of,
    key_of,
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


def test_copies_of_a_text_ending_in_blank_lines() -> None:
    """A passage of *The Gambler* ending '...on my part.\n\n\n\n\n' ends, in SmolLM2's
    tokens, '.' (20), '\n\n' (21), '\n\n\n' (22); repeated, the blank lines and the
    joining space become '\n\n\n\n' (23), '\n ' (24): without its last token the pattern
    still ends in 21, found once; without its last two it is found in every copy (the
    claims benchmark's one CAMIA error before this)."""
    ids = [1, 2, 3, 4, 20, 21, 22]
    rep_ids = ([1, 2, 3, 4, 20, 23, 24] + [9, 2, 3, 4, 20, 23, 24] * 4
               + [9, 2, 3, 4, 20, 21, 22])
    rep_lp = [-float(i) for i in range(len(rep_ids) - 1)]
    got = copies(ids, rep_ids, rep_lp)
    assert got == [rep_lp[s - 1 : s + 2] for s in (2, 9, 16, 23)]
    assert copies(ids, rep_ids[:7] + [9, 2, 3, 4, 20, 21, 22], rep_lp[:13]) == []


def test_all_75_signals_in_their_groups() -> None:
    x = [-(i % 7) * 0.5 - 0.1 for i in range(40)]
    ids = list(range(41))
    rep_ids = ids + [99] + ids[1:] + [99] + ids[1:] + [99] + ids[1:] + [99] + ids[1:]
    rep_lp = [-(i % 5) * 0.3 for i in range(len(rep_ids) - 1)]
    s = camia_signals(x, ids, rep_lp, rep_ids)
    assert len(s) == 75
    assert {group_of(k) for k in s} == set(DIRECTIONS)
    # the authors' 25 keys (run_ours_train_lr.py), 3 signals each
    assert len(KEYS) == 25 and {key_of(k) for k in s} == set(KEYS)
    assert all(sum(key_of(k) == key for k in s) == 3 for key in KEYS)
    assert (key_of("diff1_loss_200"), key_of("diff2_lz_4"), key_of("lz_3"),
            key_of("count_above_pre_all"), key_of("count_above_2")) == (
        "diff1_loss", "diff2_lz", "lz", "count_above_pre", "count_above")


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


def _as_groups() -> dict[str, int]:
    return {k: DIRECTIONS[group_of(k)] for k in KEYS}


def test_per_key_signs_orient_each_key_alone() -> None:
    """Population loss_full oriented by the default (-1): 1, 2, 3, 4; the text's -0.5 -> 0.5
    is below all, p = 0. Signs that only flip diff1_loss keep loss_full's p = 0 and turn
    diff1_loss_full (population 1..4, the text 4.5, above all) from p = 0 (negated: -4.5
    below -1..-4) to p = 1, so the score falls from 0 to -(0 + 1) / 2."""
    pop = [{"loss_full": -v, "diff1_loss_full": v} for v in (1.0, 2.0, 3.0, 4.0)]
    text = {"loss_full": -0.5, "diff1_loss_full": 4.5}
    assert camia_score(text, pop) == 0.0  # one sign per group: both negated
    assert camia_score(text, pop, _as_groups()) == 0.0  # the groups' signs per key: the same
    flipped = _as_groups() | {"diff1_loss": 1}
    assert camia_score(text, pop, flipped) == pytest.approx(-0.5)


def test_per_key_signs_as_the_groups_leave_every_score_unchanged() -> None:
    """On all 75 signals (names from a real trajectory, values seeded and distinct): the
    groups' signs given per key score as the default; every key flipped turns each p-value
    (no ties: the share of the population below) into 1 - p, so -mean(p) into mean(p) - 1."""
    import random

    x = [-(i % 7) * 0.5 - 0.1 for i in range(40)]
    ids = list(range(41))
    rep_ids = ids + [99] + ids[1:] + [99] + ids[1:] + [99] + ids[1:] + [99] + ids[1:]
    names = list(camia_signals(x, ids, [-0.1] * (len(rep_ids) - 1), rep_ids))
    rng = random.Random(3)
    pop = [{k: rng.random() for k in names} for _ in range(7)]
    for _ in range(3):
        text = {k: rng.random() for k in names}
        plain = camia_score(text, pop)
        assert camia_score(text, pop, _as_groups()) == plain
        flipped = camia_score(text, pop, {k: -v for k, v in _as_groups().items()})
        assert flipped == pytest.approx(-1 - plain, abs=1e-12)
        assert flipped != pytest.approx(plain)


def test_signs_by_label_per_key_and_per_group() -> None:
    """Members score higher on loss_full (negate: -1) but lower on diff1_loss_full (1): per
    key the two differ; per group, the mean over both (members 1.5, non-members 0.5) says
    -1."""
    sigs = [{"loss_full": 3.0, "diff1_loss_full": 0.0}, {"loss_full": 0.0,
                                                          "diff1_loss_full": 1.0}]
    assert signs_by_label(sigs, [True, False]) == {"loss": -1, "diff1_loss": 1}
    assert signs_by_label(sigs, [True, False], per_key=False) == {"loss": -1}


def test_camia_signs_are_checked() -> None:
    from recitation.errors import ConfigError
    from recitation.runs.jobs import make_job

    assert check_signs(_as_groups()) == _as_groups()
    for bad in ({k: v for k, v in _as_groups().items() if k != "slope"},
                _as_groups() | {"loss": 2}, _as_groups() | {"lz_complexity": 1}):
        with pytest.raises(ConfigError, match="camia_signs"):
            check_signs(bad)
        with pytest.raises(ConfigError, match="camia_signs"):
            make_job("detect", {"detectors": ["camia"], "camia_signs": bad}, seed=0)
    job = make_job("detect", {"detectors": ["camia"], "camia_signs": _as_groups()}, seed=0)
    assert job.params.camia_signs == _as_groups()


def test_camia_signs_and_samia_words_from_the_command_line(tmp_path: Path) -> None:
    from recitation.cli import build_parser
    from recitation.detect.cli import _params
    from recitation.errors import ConfigError

    p = _params(build_parser().parse_args(["detect"]))
    assert p["samia_words"] == "authors" and p.get("camia_signs") is None
    path = tmp_path / "signs.json"
    path.write_text(json.dumps(_as_groups()), encoding="utf-8")
    p = _params(build_parser().parse_args(["detect", "--samia-words", "whitespace",
                                           "--camia-signs", str(path)]))
    assert p["samia_words"] == "whitespace" and p["camia_signs"] == _as_groups()
    path.write_text("[1, -1]", encoding="utf-8")
    with pytest.raises(ConfigError, match="--camia-signs"):
        _params(build_parser().parse_args(["detect", "--camia-signs", str(path)]))


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


def test_camia_signs_reach_the_detector(tmp_path: Path) -> None:
    """A detect run on the scripted model (words as tokens): the groups' signs given per key
    score as the default; every key flipped changes the scores."""
    import asyncio
    import random

    from recitation.models.scripted import ScriptedModel
    from recitation.runs.jobs import make_job

    rng = random.Random(1)
    vocab = ["a", "to", "the", "word", "house", "garden", "remember", "particular"]

    def jsonl(path: Path, n: int) -> str:
        rows = [" ".join(rng.choice(vocab) for _ in range(30)) for _ in range(n)]
        path.write_text("".join(json.dumps({"text": t}) + "\n" for t in rows))
        return str(path)

    base = {"members": [jsonl(tmp_path / "m.jsonl", 4)],
            "controls": [jsonl(tmp_path / "c.jsonl", 10)], "detectors": ["camia"],
            "n_bootstrap": 0}

    def scores(signs: dict[str, int] | None) -> list[float]:
        job = make_job("detect", base | {"camia_signs": signs}, seed=0)
        recs = asyncio.run(job.run_items(job.items(), ScriptedModel()))
        assert not [e for r in recs for e in r["errors"]]
        return [s["score"] for r in recs for s in r["scores"] if s["detector"] == "camia"]

    default = scores(None)
    assert len(default) == 14 - 3  # 30% of 10 controls calibrate
    assert scores(_as_groups()) == default
    assert scores({k: -v for k, v in _as_groups().items()}) != default
