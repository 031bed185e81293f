"""The long member / control sets: >= 250 words per item, matched lengths, not separable by
the shift guard, and controls that are new text (no long run shared with the KJV)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from recitation.corpus.kjv import FAMOUS_PASSAGES_LONG
from recitation.detect.controls_long import KJV_DEVOTIONAL_LONG, MIN_WORDS
from recitation.detect.samples import load_samples

scipy_stats = pytest.importorskip("scipy.stats")


@pytest.fixture(scope="module")
def members() -> list[str]:
    return [s.text for s in load_samples("kjv:famous-long", "member")]


@pytest.fixture(scope="module")
def controls() -> list[str]:
    return [s.text for s in load_samples("builtin:kjv-devotional-long", "control")]


def _words(texts: list[str]) -> list[int]:
    return [len(t.split()) for t in texts]


def test_sets_are_registered_as_sources(members: list[str], controls: list[str]) -> None:
    assert len(members) == len(FAMOUS_PASSAGES_LONG) == 20
    assert len(controls) == len(KJV_DEVOTIONAL_LONG) == 20
    ids = [s.id for s in load_samples("builtin:kjv-devotional-long", "control")]
    assert ids[0] == "kjv-devotional-long:00" and len(set(ids)) == 20
    assert load_samples("kjv:famous-long", "member")[3].id == "kjv:Psalms 27:1-14"
    assert len(set(controls)) == 20


def test_every_item_has_at_least_250_words(members: list[str], controls: list[str]) -> None:
    assert MIN_WORDS == 250
    assert min(_words(members)) >= MIN_WORDS, _words(members)
    assert min(_words(controls)) >= MIN_WORDS, _words(controls)


def test_length_distributions_match(members: list[str], controls: list[str]) -> None:
    m, c = _words(members), _words(controls)
    assert scipy_stats.ks_2samp(m, c).pvalue > 0.2
    assert abs(sum(m) / 20 - sum(c) / 20) < 15  # mean words: 325 vs 323


def test_shift_guard_does_not_separate_members_from_controls_the_blind_baseline_does(
        members: list[str], controls: list[str], require: Any) -> None:
    require.module("sklearn", "pip install 'recitation[detect]'")
    from recitation.detect.blind import blind_baseline
    from recitation.detect.calibrate import shift_guard

    out = shift_guard(members, controls, seed=0, permutations=50)
    auc = out["feature_auc"]
    assert 0.35 < auc["length_words"] < 0.65
    assert not out["warnings"]
    # ... but the blind baseline's 1-2-grams do (function-word pairs: 'on the', 'and to',
    # 'by the'): stated in controls_long.py, so audits with these controls do not count
    # the detectors until the texts are rewritten
    blind = blind_baseline(members, controls, seed=0)
    assert blind is not None and blind["separates"] and 0.75 < blind["auc"] < 0.9, blind
    assert {w["ngram"] for w in blind["words"]} >= {"on the", "and to", "by the"}


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z]+", text.lower())


def _grams(words: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def test_controls_are_new_text_not_copies_of_the_bible(members: list[str],
                                                       controls: list[str]) -> None:
    from recitation.corpus.kjv import kjv_verses

    member_grams: set[tuple[str, ...]] = set()
    for m in members:
        member_grams |= _grams(_tokens(m), 8)
    bible = [w for _, v in sorted(kjv_verses().items()) for w in _tokens(v)]
    bible_grams = _grams(bible, 11)  # longer than any stock formula ("the grace of our ...")
    for i, c in enumerate(controls):
        words = _tokens(c)
        assert not _grams(words, 8) & member_grams, f"control {i} copies a member"
        assert not _grams(words, 11) & bible_grams, f"control {i} copies a KJV verse"
