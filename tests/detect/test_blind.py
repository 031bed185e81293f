"""The blind baseline (detect/blind.py): a bag-of-words classifier that never queries the
model, out of fold (Das et al., 2024). Checked against scikit-learn's own cross-validated
predictions, loud on text of another genre (KJV verses against novels), quiet where text
and controls are drawn from one pool, and the verdict's use of it."""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
import pytest

from recitation.corpus.kjv import kjv_verses
from recitation.corpus.pdnc import load_pdnc_novel
from recitation.detect import blind as blind_mod
from recitation.detect.blind import SEPARATES_AUC, blind_baseline
from recitation.verdict import Blind, Counts, Detector, Inputs, decide


def _chunks(words: list[str], n: int, k: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(words[i:i + n]) for i in
            (rng.randrange(len(words) - n) for _ in range(k))]


@pytest.fixture(scope="module")
def kjv() -> list[str]:
    return _chunks(" ".join(kjv_verses().values()).split(), 60, 20, 1)


@pytest.fixture(scope="module")
def emma(shared_data: Path) -> list[str]:
    return load_pdnc_novel(shared_data / "pdnc" / "Emma").text.split()


def test_out_of_fold_auc_equals_scikit_learns_cross_validated_predictions(
        kjv: list[str], emma: list[str]) -> None:
    """The reference: scikit-learn's ``cross_val_predict`` over the same pipeline and folds,
    and its ``roc_auc_score``."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    text, controls = kjv[:12] + _chunks(emma, 60, 4, 5), _chunks(emma, 60, 16, 2)
    got = blind_baseline(text, controls, seed=3, n_boot=200)
    assert got is not None
    x = CountVectorizer(binary=True, ngram_range=(1, 2)).fit_transform(text + controls)
    y = np.array([1] * len(text) + [0] * len(controls))
    prob = cross_val_predict(LogisticRegression(solver="liblinear", random_state=3), x, y,
                             cv=StratifiedKFold(5, shuffle=True, random_state=3),
                             method="predict_proba")[:, 1]
    assert got["auc"] == pytest.approx(roc_auc_score(y, prob))
    lo, hi = got["auc_ci"]
    assert lo <= got["auc"] <= hi and got["folds"] == 5


def test_kjv_text_against_novel_controls_separates_and_names_the_words(
        kjv: list[str], emma: list[str]) -> None:
    got = blind_baseline(kjv, _chunks(emma, 60, 20, 2))
    assert got is not None and got["separates"] and got["auc"] > 0.95
    assert got["auc_ci"][0] > SEPARATES_AUC
    words = {w["ngram"]: w for w in got["words"]}
    assert words and set(words) & {"unto", "lord", "god", "shall", "thee", "thou"}
    for w in got["words"]:  # each word's counts are the passages that hold it
        side = kjv if w["points_to"] == "text" else None
        if side is not None and " " not in w["ngram"]:
            held = sum(w["ngram"] in re.findall(r"\b\w\w+\b", t.lower()) for t in kjv)
            assert w["in_text"] == held > w["in_controls"]
    line = Blind.model_validate(got).describe()
    assert "the controls differ from the text" in line and "'" in line


def test_text_and_controls_drawn_from_one_pool_stay_quiet(emma: list[str]) -> None:
    """Passages of one novel split at random, five seeds: the interval never lies above the
    threshold."""
    for seed in range(5):
        got = blind_baseline(_chunks(emma, 60, 20, 10 + seed), _chunks(emma, 60, 20, 50 + seed),
                             seed=seed)
        assert got is not None and not got["separates"], got["auc_ci"]
        assert got["words"] == []


def test_too_few_passages_give_no_baseline() -> None:
    assert blind_baseline(["one text"], ["a control", "another one"]) is None


def _blind(separates: bool) -> Blind:
    lo = 0.9 if separates else 0.3
    return Blind(auc=lo + 0.05, auc_ci=(lo, lo + 0.1), threshold=SEPARATES_AUC,
                 separates=separates, n_text=10, n_controls=20, folds=5, features=99,
                 method="bag of words", words=[{"ngram": "unto", "points_to": "text",
                                                "coef": 1.2, "in_text": 8,
                                                "in_controls": 0}] if separates else [])


def test_a_separating_baseline_sets_the_detectors_aside_not_reproduction() -> None:
    det = Detector(name="min_k_20", n=10, flagged=9, reachable=True, fpr_bound=0.05)
    quiet = decide(Inputs(controls=20, detectors=[det], blind=_blind(False)))
    assert quiet.rule == "detectors" and quiet.significant == ["min_k_20"]
    assert any("do not tell them apart" in r for r in quiet.reasons)
    loud = Inputs(controls=20, detectors=[det], blind=_blind(True))
    f = decide(loud)
    assert f.rule == "shifted_controls" and f.label == "no verdict" and f.why_none
    assert "'unto'" in f.why_none and "detectors not counted" in f.why_none
    nothing = decide(loud.model_copy(update={"prefix": (Counts(n=10, reproduced=0),
                                                        Counts(n=20, reproduced=0))}))
    assert nothing.rule == "shifted_nothing" and nothing.level == "low"
    assert nothing.significant == [] and "p min_k_20" not in nothing.numbers
    copied = decide(loud.model_copy(update={"prefix": (Counts(n=10, reproduced=8),
                                                       Counts(n=20, reproduced=0))}))
    assert copied.rule == "reproduction" and copied.level == "high"


def test_the_shift_guard_no_longer_fits_its_own_word_model(kjv: list[str],
                                                           emma: list[str]) -> None:
    """The words are the blind baseline's alone (nothing computed twice)."""
    from recitation.detect.calibrate import shift_guard

    out = shift_guard(kjv[:8], _chunks(emma, 60, 8, 2), permutations=20)
    assert set(out["feature_auc"]) == {"length_words", "date_tokens"}
    assert not hasattr(blind_mod, "shift_guard")


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.parametrize("preset", ["lowfpr", "quick"])
def test_the_organism_splits_stay_quiet(preset: str, shared_data: Path) -> None:
    """The organisms' members against their non-members (one pool, drawn at random): the
    blind baseline stays near 0.5 and quiet. On the low-FPR split (500 members, 1,000
    non-members) it reproduces the text-only AUCs a review found (0.46-0.52: 0.473 for a
    bag of words with logistic regression)."""
    import transformers

    from recitation.models.local import LocalModel
    from recitation.organism.build import token_offsets
    from recitation.organism.config import LOWFPR, make_config
    from recitation.organism.data import load_novels, split_passages

    cfg = LOWFPR if preset == "lowfpr" else make_config(quick=True)
    tok = transformers.AutoTokenizer.from_pretrained(
        LocalModel(cfg.base).transformers_dir(), local_files_only=True)
    ps = split_passages(cfg, load_novels(cfg), lambda t: token_offsets(tok, t),
                        lambda t: len(tok(t, add_special_tokens=True)["input_ids"]))
    got = blind_baseline([p.text for p in ps if p.member], [p.text for p in ps if not p.member])
    assert got is not None and not got["separates"], got
    if preset == "lowfpr":
        assert (got["n_text"], got["n_controls"]) == (500, 1000)
        assert 0.45 < got["auc"] < 0.52 and got["auc_ci"][1] < SEPARATES_AUC


def test_recitation_methods_lists_the_blind_baseline_as_a_guard(
        capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from recitation.cli import main

    capsys.readouterr()
    assert main(["methods", "--kind", "guard", "--json"]) == 0
    guard = {g["name"]: g for g in json.loads(capsys.readouterr().out)}["blind_baseline"]
    assert guard["access"] == [] and guard["calls"].startswith("none")
    assert str(SEPARATES_AUC) in guard["on_failure"]
