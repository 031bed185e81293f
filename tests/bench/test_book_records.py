"""The whole-book benchmark on the full ``book`` organism, as kept in ``benchmarks/whole_book``
(``recitation bench book --preset book --calls 140 --keep benchmarks/whole_book
--write-docs docs/whole-book.md``): the doc's table is the one its records give, every share
is recomputed from the kept texts, and the continuation's share independently with the
paper's one-generation nv-recall (:mod:`recitation.metrics.nvrecall`, not the function the
benchmark calls)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from recitation.bench.book import equal_budget, markdown
from recitation.metrics.book_recall import book_recall

ROOT = Path(__file__).resolve().parents[2]
KEPT = ROOT / "benchmarks" / "whole_book"
DOC = ROOT / "docs" / "whole-book.md"


@pytest.fixture(scope="module")
def res() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((KEPT / "book.json").read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, list[str]], str]:
    from recitation.bench.book import book_text

    with gzip.open(KEPT / "book-texts.json.gz", "rt", encoding="utf-8") as f:
        data = json.load(f)
    path = tmp_path_factory.mktemp("book") / "book.txt"
    path.write_text(data["book"], encoding="utf-8")
    return book_text(path), data["texts"], str(path)


def test_the_docs_table_is_the_one_the_records_give(res: dict[str, Any]) -> None:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("<!-- bench-book:start -->\n", 1)[1].split("\n<!-- bench-book:end -->")[0]
    assert block == markdown(res)
    assert res["organism"] == "book" and res["config"]["calls"] == 140
    assert equal_budget(res)
    assert {(r["epoch"], r["method"]) for r in res["rows"]} == {
        (e, m) for e in (0, 1, 4, 16) for m in ("continue", "prefix", "recap")}


def test_every_share_is_recomputed_from_the_kept_texts(
        res: dict[str, Any], kept: tuple[Any, dict[str, list[str]], str]) -> None:
    book, texts, _ = kept
    assert len(book) == res["book_words"]
    for r in res["rows"]:
        got = book_recall(book, texts[f"{r['method']}-epoch{r['epoch']}"])
        assert (got.nv_recall, got.covered, got.longest_block) == (
            r["nv_recall"], r["covered_words"], r["longest_block_words"]), r


def test_the_continuation_share_is_the_papers_one_generation_nv_recall(
        res: dict[str, Any], kept: tuple[Any, dict[str, list[str]], str]) -> None:
    from recitation.corpus.books import load_book
    from recitation.metrics.nvrecall import WHOLE_TEXT, nv_recall

    _, texts, path = kept
    reference = "\n\n".join(c.full_text for c in load_book(Path(path)).chapters)
    for r in res["rows"]:
        if r["method"] == "continue":
            (text,) = texts[f"continue-epoch{r['epoch']}"]
            assert nv_recall(reference, text, WHOLE_TEXT).matched == r["covered_words"], r


def _rows(res: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["method"], r["epoch"]): r for r in res["rows"]}


def test_the_share_rises_with_dose_and_the_base_model_stays_at_zero(res: dict[str, Any]) -> None:
    rows = _rows(res)
    for method in ("continue", "prefix", "recap"):
        shares = [rows[method, e]["nv_recall"] for e in (0, 1, 4, 16)]
        assert shares[0] == 0.0 and shares == sorted(shares), (method, shares)
        assert shares[3] > 0.0, method
    # the note's comparison at equal budget: prefix probing far ahead of the other two
    assert rows["prefix", 16]["nv_recall"] > 0.5 > 10 * rows["continue", 16]["nv_recall"]
    # continuation's share is one block, ended by the stop rule long before the budget
    cont = rows["continue", 16]
    assert cont["covered_words"] == cont["longest_block_words"] and cont["calls"] < 140


def _longest_exact_runs(book: str, texts: list[str]) -> list[int]:
    """Per text, the longest run of words it shares with the book (difflib, lower case)."""
    import difflib

    ref = book.lower().split()
    runs = []
    for t in texts:
        words = t.lower().split()
        sm = difflib.SequenceMatcher(None, ref, words, autojunk=False)
        runs.append(sm.find_longest_match(0, len(ref), 0, len(words)).size)
    return runs


def test_the_notes_figures_are_the_records(
        res: dict[str, Any], kept: tuple[Any, dict[str, list[str]], str]) -> None:
    """The sentences under the table quote the records, and the epoch-4 runs it cites (pieces
    of the book below the measure's 100-word blocks) are recomputed with difflib."""
    _, texts, path = kept
    text = DOC.read_text(encoding="utf-8")
    note = " ".join(text.split("<!-- bench-book:end -->", 1)[1].split("## Differences", 1)[0]
                    .split())  # the prose as one line: its wrapping is not a figure
    rows = _rows(res)
    for key in (("prefix", 16), ("continue", 16), ("recap", 16)):
        assert f"{rows[key]['nv_recall']:.1%}" in note, key
    assert f"{rows['continue', 16]['covered_words']} words" in note
    assert f"{rows['prefix', 16]['longest_block_words']} words" in note
    assert f"{rows['recap', 16]['longest_block_words']} words" in note
    runs = _longest_exact_runs(Path(path).read_text(encoding="utf-8"), texts["prefix-epoch4"])
    assert len(runs) == 140 and max(runs) < 100
    assert f"is {max(runs)} words" in note
    assert f"{sum(r >= 20 for r in runs)} replies hold a run of at least 20" in note
