"""Hint-leak guard on planted leaks; the memorization-score formula; the verifier's parsing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recitation.corpus.tokenize import words
from recitation.extract.filter import BETAS, memorization_score
from recitation.extract.leak import LeakConfig, guard, measure, summarize_leaks
from recitation.extract.verifier import combine, keyword_refusal, parse_judge

GOLD = ("It was the best of times, it was the worst of times, it was the age of wisdom, it "
        "was the age of foolishness, it was the epoch of belief, it was the epoch of "
        "incredulity, it was the season of Light, it was the season of Darkness.")


def test_clean_hint_is_not_flagged() -> None:
    hint = ("1. MAJOR STRUCTURAL ISSUES:\n- The opening series of contrasts is incomplete.\n"
            "2. MISSING ELEMENTS:\n- Several paired opposites about eras are missing.")
    s = measure(hint, GOLD)
    assert not s.flagged and s.shared_ngrams == 0 and s.longest_span < 5


def test_planted_verbatim_leak_is_flagged_with_exact_span() -> None:
    planted = "it was the age of wisdom, it was the age of foolishness, it was the epoch"
    hint = f"- You should have written: \u201c{planted.upper()}\u201d and more."
    s = measure(hint, GOLD)
    assert s.flagged
    assert s.longest_span == len(words(planted)) == 16
    assert s.shared_ngrams == 16 - 8 + 1  # every 8-gram of the planted run


def test_short_overlap_below_thresholds() -> None:
    s = measure("the season of Light matters", GOLD, LeakConfig(n=8, max_span=12))
    assert s.longest_span == 4 and s.shared_ngrams == 0 and not s.flagged


def test_allowed_first_sentence_does_not_count() -> None:
    first = "It was the best of times, it was the worst of times,"
    s = measure(f"Begin with: {first} then continue.", GOLD, allowed=[first])
    assert not s.flagged and s.shared_ngrams == 0 and s.longest_span <= 1


def test_block_removes_only_leaking_lines() -> None:
    hint = ("1. MISSING ELEMENTS:\n- Pairs of contrasting eras are missing.\n"
            "- The text says it was the epoch of belief, it was the epoch of incredulity\n"
            "3. INACCURATE ELEMENTS:\n- Wrong order of ideas.")
    g = guard(hint, GOLD, LeakConfig(block=True))
    assert g.before.flagged and not g.after.flagged and not g.blocked
    assert g.removed_lines == 1 and "epoch" not in g.text and "Wrong order" in g.text
    g2 = guard(hint, GOLD, LeakConfig(block=False))
    assert g2.text == hint and g2.before.flagged and g2.removed_lines == 0


def test_fully_leaking_hint_is_blocked() -> None:
    g = guard(GOLD, GOLD, LeakConfig(block=True))
    assert g.blocked and g.text == ""


def test_summarize_leaks() -> None:
    stats = [measure(GOLD, GOLD).to_dict(), measure("nothing here", GOLD).to_dict()]
    agg = summarize_leaks(stats)
    assert agg["count"] == 2 and agg["flagged"] == 1
    assert agg["max_longest_span"] == len(words(GOLD))


# equation 1 with the paper's coefficients, worked by hand:
# (0, 1, 1): z = 4 + 4.5 + 1.5 - 5 = 5, sigmoid(5) = 0.993307149...
# (1, 0, 0): z = -5, sigmoid(-5) = 0.006692851...
# (0.5, 0.5, 0.5): z = 2 + 2.25 + 0.75 - 5 = 0, sigmoid(0) = 0.5
# (0.2, 0.7, 0.9): z = 3.2 + 3.15 + 1.35 - 5 = 2.7, sigmoid(2.7) = 0.937026644...
@pytest.mark.parametrize("loss,rouge,cos,score", [(0.0, 1.0, 1.0, 0.9933071491),
                                                  (1.0, 0.0, 0.0, 0.0066928509),
                                                  (0.5, 0.5, 0.5, 0.5),
                                                  (0.2, 0.7, 0.9, 0.9370266440)])
def test_memorization_score_equation_1(loss: float, rouge: float, cos: float,
                                       score: float) -> None:
    assert memorization_score(loss, rouge, cos) == pytest.approx(score, abs=1e-9)
    assert BETAS == (4.0, 4.5, 1.5, -5.0)


def test_memorization_score_centre_and_order() -> None:
    # at the midpoint of every signal the paper's coefficients give sigmoid(0) = 0.5
    assert memorization_score(0.5, 0.5, 0.5) == pytest.approx(0.5)
    assert memorization_score(0.1, 0.9, 0.9) > 0.98 > 0.01 > memorization_score(1, 0, 0)


@pytest.mark.parametrize("text,refused", [
    ("", True), ("   ", True),
    ("I'm sorry, but I can't reproduce that passage.", True),
    ("I cannot provide copyrighted text verbatim.", True),
    ("Marley was dead: to begin with. There is no doubt whatever about that.", False),
    ("Certainly! Here is the passage:\n\nMarley was dead.", False),
])
def test_keyword_refusal(text: str, refused: bool) -> None:
    assert keyword_refusal(text) is refused


@pytest.mark.parametrize("reply,opinion", [("Yes", True), ("no.", False), ('"No"', False),
                                           ("Answer: yes, relevant", True), ("maybe", None),
                                           ("", None)])
def test_parse_judge(reply: str, opinion: bool | None) -> None:
    assert parse_judge(reply) is opinion


def test_combine_modes() -> None:
    assert combine("judge", False, False) is True
    assert combine("judge", None, True) is True  # no opinion -> keywords
    assert combine("judge_or_keywords", True, True) is True
    assert combine("judge_and_keywords", False, False) is False
    assert combine("keywords", False, False) is False


def test_parrot_trains_within_budget_and_is_cached_per_book(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from recitation.extract.filter import FilterConfig, load_or_train_parrot, parrot_dir

    monkeypatch.setenv("RECITATION_MODEL_CACHE_DIR", str(tmp_path))
    cfg = FilterConfig(time_budget_s=0.5, chunk_tokens=32, stride=8, eval_masks=2)
    book = GOLD * 4
    first = load_or_train_parrot(book, cfg)
    assert first.report["cached"] is False and first.report["steps"] >= 1
    # training stops at the time budget (or earlier, on converging or at max_epochs): no
    # wall-clock upper bound, which a busy machine can break
    assert (first.report["seconds"] >= cfg.time_budget_s
            or first.report["final_train_loss"] < cfg.early_stop_loss
            or first.report["epochs"] >= cfg.max_epochs)
    assert parrot_dir(book, cfg).is_dir() and parrot_dir(book + " x", cfg) != parrot_dir(book, cfg)
    again = load_or_train_parrot(book, cfg)
    assert again.report["cached"] is True and again.ref_loss == first.ref_loss
    text = "it was the age of wisdom, it was the age of foolishness"
    assert again.raw_loss(text) == pytest.approx(first.raw_loss(text))  # seeded masks
    assert 0.0 <= again.normalized_loss(text) <= 1.0
    assert again.normalized_loss("") == 1.0


MODERN_TEXTS = [  # non-book text: instructions, notices, reports (written for this test)
    "To reset your router, unplug the power cable, wait thirty seconds, and plug it back in. "
    "If the status light keeps blinking orange after five minutes, log in to the admin page "
    "and check the firmware version under Settings.",
    "Preheat the oven to 200 degrees. Whisk two eggs with the milk and a pinch of salt, then "
    "pour the batter into a greased tin and bake for twenty-five minutes, until the top is "
    "golden.",
    "Please remember that the staff meeting has moved to Thursday at 3 pm in conference room "
    "B. Bring your laptop and the updated project timeline so that we can review the "
    "deliverables.",
    "Our quarterly revenue grew twelve percent year over year, driven by strong subscription "
    "sales in the enterprise segment; operating margin improved, and we expect continued "
    "growth next year.",
    "Install the package with pip, then import the client and call the connect method with "
    "your API key. Requests that exceed the rate limit return an error; retry them with "
    "exponential backoff.",
]


@pytest.mark.slow
def test_filter_separates_book_text_from_other_text(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_data: Path, require: Any) -> None:
    """A parrot trained on the first chapter of Alice's Adventures in Wonderland (Carroll,
    1865; PDNC's Project Gutenberg text) gives every paragraph of it a lower masked-LM loss
    than every modern non-book text (measured margin ~0.9 nats); and the hybrid score passes
    a verbatim recall of a paragraph (gold = that paragraph) and filters out the modern texts
    scored against the same gold. Training is bounded by epochs (5), not by the clock, so
    the parrot is the same on any machine up to torch's CPU kernels.

    The normalized loss (min(1, loss / loss of the shuffled book)) is not asserted: after
    this much training the paragraphs, which do not start on the 32-token training grid,
    score 0.97-1.0 there, against 1.0 for the modern texts."""
    from recitation.extract.filter import FilterConfig, load_or_train_parrot, score_extraction

    rouge_scorer = require.module("rouge_score.rouge_scorer", "pip install -e '.[dev]'")
    require.module("sentence_transformers", "pip install -e '.[embed,local]'")
    monkeypatch.setenv("RECITATION_MODEL_CACHE_DIR", str(tmp_path))
    novel = shared_data / "pdnc" / "AlicesAdventuresInWonderland" / "novel_text.txt"
    book = novel.read_text(encoding="utf-8")[:12000]  # chapter I
    cfg = FilterConfig(time_budget_s=600, max_epochs=5)
    parrot = load_or_train_parrot(book, cfg)
    assert parrot.report["epochs"] >= 5, parrot.report  # the clock did not cut it short
    paragraphs = [" ".join(p.split()) for p in book.split("\n\n") if len(p.split()) > 30][:8]
    assert len(paragraphs) == 8
    book_loss = [parrot.raw_loss(p) for p in paragraphs]
    other_loss = [parrot.raw_loss(t) for t in MODERN_TEXTS]
    assert max(book_loss) + 0.3 < min(other_loss), (book_loss, other_loss)

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    for gold in paragraphs[:3]:
        recalled = score_extraction(parrot, gold, gold, 1.0, 0.5)
        others = [score_extraction(parrot, t, gold, scorer.score(gold, t)["rougeL"].recall, 0.5)
                  for t in MODERN_TEXTS]
        assert recalled.passed and not any(o.passed for o in others), (recalled, others)
        assert recalled.cosine > 0.99 and max(o.cosine for o in others) < 0.3
