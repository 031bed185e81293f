"""Our NLTK word tokenization without downloadable data, against NLTK itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recitation.corpus.tokenize import legacy_word_tokenize, sent_tokenize, word_tokenize


def _punkt_tab(root: Path) -> None:
    """Write the packaged English Punkt parameters as NLTK's punkt_tab files."""
    import punkt

    model = punkt.load_model("english")
    d = root / "tokenizers" / "punkt_tab" / "english"
    d.mkdir(parents=True)
    (d / "collocations.tab").write_text(
        "".join(f"{a}\t{b}\n" for a, b in sorted(model.collocations))
    )
    (d / "sent_starters.txt").write_text("".join(f"{a}\n" for a in sorted(model.sent_starters)))
    (d / "abbrev_types.txt").write_text("".join(f"{a}\n" for a in sorted(model.abbrev_types)))
    (d / "ortho_context.tab").write_text(
        "".join(f"{a}\t{b}\n" for a, b in sorted(model.ortho_context.items()))
    )


def test_equals_nltk_word_tokenize(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, require: Any
) -> None:
    nltk = require.module("nltk", "pip install -e . (a dependency of recitation itself)")
    _punkt_tab(tmp_path)
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path), *nltk.data.path])
    path = next(
        (shared_data / "echotrace/books/A_Christmas_Carol_-_Charles_Dickens/Extractions").glob(
            "*.json"
        )
    )
    data = json.loads(path.read_text(encoding="utf-8"))
    texts = [ev[k] for ch in data["chapters"] for ev in ch["events"] for k in ("text_segment",)]
    texts += [
        ev["LLM_completions"]["prefix-probing"] for ch in data["chapters"] for ev in ch["events"]
    ]
    for text in texts:
        assert word_tokenize(text) == nltk.word_tokenize(text)
        assert sent_tokenize(text) == nltk.sent_tokenize(text)


def test_legacy_rules_differ_where_nltk_changed() -> None:
    """NLTK 3.8.1 (the RECAP release's version) kept a leading straight quote on its word and
    did not split em dashes; the exact reproduction of the released span counts in
    tests/test_evaluate.py depends on these rules."""
    text = "'Good, take this,' said he\u2014'take care.'"
    assert legacy_word_tokenize(text) == [
        "'Good",
        ",",
        "take",
        "this",
        ",",
        "'",
        "said",
        "he\u2014'take",
        "care",
        ".",
        "'",
    ]
    assert word_tokenize(text)[:2] == ["'", "Good"] and "\u2014" in word_tokenize(text)


def test_words_fold_case_punctuation_and_typographic_apostrophes() -> None:
    from recitation.corpus.tokenize import words

    assert words("And GOD said, \u201cLet there be light.\u201d Don\u2019t") == [
        "and", "god", "said", "let", "there", "be", "light", "don't"]
    assert words("") == [] and words("-- ... !") == []


def test_estimate_tokens_is_a_quarter_of_the_characters_at_least_one() -> None:
    from recitation.corpus.tokenize import estimate_tokens

    assert [estimate_tokens(t) for t in ("", "abc", "abcd", "x" * 41)] == [1, 1, 1, 10]


def test_split_at_word_keeps_spacing_and_refuses_empty_sides() -> None:
    from recitation.corpus.chunking import split_at_word
    from recitation.errors import CorpusError

    assert split_at_word("In the  beginning\nGod created", 3) == ("In the  beginning",
                                                                  "God created")
    for text, k in (("one", 1), ("one two", 0), ("one two", 2)):
        with pytest.raises(CorpusError):
            split_at_word(text, k)
