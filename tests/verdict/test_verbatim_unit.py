"""The one verbatim rule (metrics/verbatim.py) at its edges, against brute force and the
rule's definition (issue 46 item 6: the mutants that tests/verdict/test_one_verbatim_rule.py
left alive; fast: no model)."""

from __future__ import annotations

from test_one_verbatim_rule import _brute  # the one brute force of both files

from recitation.metrics.verbatim import Verbatim, longest_run, verbatim


def test_a_long_attempt_of_common_words_is_not_junked() -> None:
    """An attempt of 240 words repeating six: difflib's junk heuristic (on by default from
    200 items) would drop every word as 'popular' and find nothing; every word counts."""
    gold = "the cat sat on the mat".split()
    attempt = ("a dog " + "the cat sat on the mat " * 39 + "and so on").split()
    assert len(attempt) >= 200
    n, gs, as_ = longest_run(gold, attempt)
    assert n == _brute(gold, attempt) == 6
    assert gold[gs:gs + n] == attempt[as_:as_ + n] and (gs, as_) == (0, 2)
    v = verbatim(" ".join(gold), " ".join(attempt), 6)
    assert v.reproduced and v.words == 6


def test_one_word_is_a_rule_and_no_shared_word_starts_nowhere() -> None:
    """min_words = 1 is allowed (any shared word); with no word shared the span is empty and
    its places are 0."""
    assert verbatim("a b c", "x c y", 1) == Verbatim(words=1, gold_start=2, attempt_start=1,
                                                     gold_words=3, min_words=1)
    assert verbatim("a b c", "x y z", 1) == Verbatim(words=0, gold_start=0, attempt_start=0,
                                                     gold_words=3, min_words=1)
    assert not verbatim("", "x y", 1).reproduced  # an empty gold text is never reproduced
