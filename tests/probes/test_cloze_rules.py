"""Name-cloze passages by the rules of Chang et al.'s ``create_name_cloze_from_booknlp.py``
(bamman-group/gpt4-books), which made the passages Michel et al. released: a hand-worked
window choice, and the rules checked on every passage of a PDNC novel."""

from __future__ import annotations

import re
from pathlib import Path

from recitation.probes.cloze_rules import INVALID_NAMES, authors_passages, tokens
from recitation.probes.name_cloze import name_words
from recitation.probes.novel import HONORIFICS, load_novel

PLAIN = "The cat sat on the mat and then it slept soundly."  # 12 tokens


def test_the_window_closest_to_50_between_two_other_names() -> None:
    """Sentences of 12 tokens between two sentences naming a place: the passage is the
    sentences strictly between them that hold the name's sentence, 40 < length < 60 with
    length = last token index - first (4 sentences: 47, 5: 59), the closest to 50 (47), the
    earliest start among equals (the 3 sentences before the name's)."""
    middle = PLAIN.replace("then it", "then Anne")
    sents = ["They saw Bath.", *[PLAIN] * 3, middle, *[PLAIN] * 4, "They left for London."]
    got = authors_passages(" ".join(sents), {"Anne"})
    assert len(got) == 1 and got[0]["answer"] == "Anne"
    want = " ".join([*[PLAIN] * 3, middle.replace("Anne", "[MASK]")])
    assert got[0]["passage"] == want
    # the same word again (in any case) in the best window: dropped (theirs: dupFlag);
    # "Rose" and "the cat rose"
    rose = " ".join(sents).replace("Anne", "Rose").replace("cat sat", "cat rose", 1)
    assert authors_passages(rose, {"Rose"}) == []
    assert len(authors_passages(" ".join(sents).replace("Anne", "Rose"), {"Rose"})) == 1
    # another mention of the name is itself a name: the window starts after it
    first = sents[1].replace("cat sat", "cat Anne sat")
    again = authors_passages(" ".join([sents[0], first, *sents[2:]]), {"Anne"})
    assert [g["start"] for g in again] == [len(f"{sents[0]} {first} ")]
    # after an honorific it is part of a two-token name: never masked
    assert authors_passages(" ".join(sents).replace("then Anne", "then Miss Anne"),
                            {"Anne"}) == []
    # too few sentences between the names: no window of 41-59 tokens
    assert authors_passages(" ".join([sents[0], middle, sents[-1]]), {"Anne"}) == []
    # a name of the invalid list is never masked
    assert authors_passages(" ".join(sents).replace("Anne", "Papa"), {"Papa"}) == []
    assert "papa" in INVALID_NAMES


def test_every_passage_of_a_novel_keeps_the_rules(shared_data: Path) -> None:
    novel = load_novel(shared_data / "pdnc" / "Persuasion")
    names = name_words(novel)
    got = authors_passages(novel.text, names)
    assert 100 < len(got) < 400  # the authors' file for Persuasion holds 51
    starts = [g["start"] for g in got]
    assert starts == sorted(starts)
    for g in got:
        p = g["passage"]
        toks = [t.text for t in tokens(p)]
        assert p.count("[MASK]") == 1 and g["answer"] in names
        # "[MASK]" reads as 3 tokens where the name was 1; length = tokens - 1
        assert 40 < len(toks) - 2 - 1 < 60, p
        before = p.split("[MASK]")[0].split()
        assert not before or before[-1].rstrip(".") not in HONORIFICS, p
        assert not re.search(rf"\b{re.escape(g['answer'])}\b", p, flags=re.I), p
        assert g["answer"].lower() not in INVALID_NAMES
        others = [w for w in names if w != g["answer"] and re.search(rf"\b{w}\b", p)]
        assert not others, (others, p)
