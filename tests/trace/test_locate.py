"""Where the copy is (issue 47, item 6): corpus folders of symbolic links, and each traced
span's lines in its document's file (and chapter), checked against a brute-force search of
the original files, through ``recitation index build`` and ``recitation trace``."""

from __future__ import annotations

import itertools
import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

from recitation.cli import main
from recitation.corpus.doc_place import place
from recitation.corpus.text import split_chapters
from recitation.report.trace_sources import doc_label
from recitation.trace.sources import chapter_slices, iter_corpus, iter_kjv_docs

ROMAN = ("I", "II", "III", "IV", "V", "VI")


def _kjv(n: int) -> list[str]:
    return [d.text for d in itertools.islice(iter_kjv_docs(), n)]


def _book(title: str, chapters: list[str], fold: bool = False) -> str:
    """A public-domain book hard-wrapped at 70 characters, with chapter headings (and, with
    ``fold``, a section too short to stand alone: folded into the one before)."""
    parts = [f"{title}\n\nThe King James Version, hard-wrapped for this test.\n"]
    if fold:
        parts.append("\n\nCHAPTER XX\n\nA short note on the text.\n")
    for k, body in enumerate(chapters):
        parts.append(f"\n\n  CHAPTER {ROMAN[k]}\n\n{textwrap.fill(body, 70)}\n")
    return "".join(parts)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``real/``: two books in two folders; ``links/``: links to those folders and files."""
    root = tmp_path_factory.mktemp("locate")
    chapters = _kjv(6)
    for name, chs, fold in (("Genesis", chapters[:3], True), ("Later", chapters[3:], False)):
        (root / "real" / name).mkdir(parents=True)
        (root / "real" / name / "novel_text.txt").write_text(_book(name.upper(), chs, fold),
                                                             encoding="utf-8")
    (root / "real" / "Later" / "notes.txt").write_text("\n\nNotes on the later chapters.\n",
                                                       encoding="utf-8")
    (root / "links").mkdir()
    os.symlink(root / "real" / "Genesis", root / "links" / "Genesis")  # a folder
    (root / "links" / "Later").mkdir()
    for f in ("novel_text.txt", "notes.txt"):  # files
        os.symlink(root / "real" / "Later" / f, root / "links" / "Later" / f)
    return root


def _excerpts(root: Path) -> list[tuple[str, str]]:
    """``(file, text)``: passages of 3-4 lines cut from the middle of chapters, each found
    once in the whole corpus."""
    files = {str(p.relative_to(root)): p.read_text(encoding="utf-8")
             for p in sorted(root.rglob("novel_text.txt"))}
    out = []
    for rel, text in files.items():
        for frac in (0.3, 0.55, 0.8):
            at = text.index(" ", int(len(text) * frac)) + 1
            cut = text[at:at + 240]
            cut = cut[:cut.rindex(" ")]
            assert sum(t.count(cut) for t in files.values()) == 1
            out.append((rel, cut))
    return out


def _brute(root: Path, path: str, span: str) -> tuple[tuple[int, int], str]:
    """The span's lines in the original file and the last chapter heading before it."""
    text = (root / path).read_text(encoding="utf-8")
    needle = span.strip()
    at = text.find(needle)
    assert at >= 0
    first = text.count("\n", 0, at) + 1
    heads = [line.strip() for line in text[:at].splitlines() if line.strip().startswith(
        "CHAPTER ")]
    return (first, first + needle.count("\n")), heads[-1] if heads else "Front matter"


def _trace(capsys: pytest.CaptureFixture[str], tmp: Path, corpus: str, gens: list[str],
           *build: str, definitions: str, json_out: bool = True) -> Any:
    """``recitation index build`` and ``recitation trace``: what trace printed (parsed, with
    ``json_out``)."""
    idx, runs = tmp / "idx", tmp / "runs"
    assert main(["index", "build", corpus, str(idx), *build]) == 0
    path = tmp / "gens.jsonl"
    path.write_text("".join(json.dumps({"id": f"g{k}", "text": g}) + "\n"
                            for k, g in enumerate(gens)), encoding="utf-8")
    capsys.readouterr()
    assert main(["trace", str(path), "--index", str(idx), "--engine", "numpy", "--runs-dir",
                 str(runs), "--no-text-mode", "--definitions", definitions,
                 *(["--json"] if json_out else [])]) == 0
    out = capsys.readouterr().out
    return json.loads(out) if json_out else out


@pytest.mark.parametrize(("chapters", "definitions", "folder"), [
    (True, "recitation", "links"), (False, "recitation", "real"), (True, "propme", "real")])
def test_span_lines_equal_brute_force(corpus: Path, tmp_path: Path, chapters: bool,
                                      definitions: str, folder: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Each span's lines (and chapter) in its file, as a search of the file finds them."""
    gens = [cut for _, cut in _excerpts(corpus / "real")]
    out = _trace(capsys, tmp_path, str(corpus / folder), gens, *(["--chapters"] * chapters),
                 definitions=definitions)
    docs = [(s, d) for g in out["generations"] for s in g["spans"] for d in s["documents"]]
    assert len({d["doc_ix"] for _, d in docs}) >= 2
    multi = 0
    for s, d in docs:
        lines, heading = _brute(corpus / folder, d["path"], s["text"])
        assert d["lines"] == list(lines), (s["text"], d)
        multi += lines[1] > lines[0]
        section = f" ({heading})" if chapters else ""
        assert d["label"] == f"{d['path']} lines {lines[0]}-{lines[1]}{section}"
        assert d["section"] == (heading if chapters else None)
    assert multi


def test_jsonl_span_lines_are_the_records_line(corpus: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A JSONL document is its own line: the span's line is the record's."""
    records = [{"text": d.text, "id": f"{d.path}#{d.linenum}"}
               for d in iter_corpus(corpus / "real", chapters=True)]
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records),
                                                 encoding="utf-8")
    gens = [cut for _, cut in _excerpts(corpus / "real")]
    out = _trace(capsys, tmp_path, str(tmp_path / "c"), gens, definitions="recitation")
    docs = [(s, d) for g in out["generations"] for s in g["spans"] for d in s["documents"]]
    assert docs
    for s, d in docs:
        line = next(k for k, r in enumerate(records, 1) if s["text"].strip() in r["text"])
        assert d["lines"] == [line, line]
        assert d["label"] == f"id {records[line - 1]['id']}, corpus.jsonl line {line}"


def test_trace_table_shows_the_lines(corpus: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """``recitation trace`` prints each span's file, lines and chapter."""
    rel, cut = _excerpts(corpus / "real")[1]
    (lines, heading) = _brute(corpus / "real", rel, cut)
    text = "".join(_trace(capsys, tmp_path, str(corpus / "links"), [cut], "--chapters",
                          definitions="recitation", json_out=False).split())
    assert f"{rel}lines{lines[0]}-{lines[1]}({heading.replace(' ', '')})" in text


def test_symlinked_folder_indexes_the_same_documents(corpus: Path) -> None:
    for chapters in (False, True):
        real = list(iter_corpus(corpus / "real", chapters=chapters))
        linked = list(iter_corpus(corpus / "links", chapters=chapters))
        assert linked == real and len(real) >= 3
    assert [d.path for d in iter_corpus(corpus / "links")] == [
        "Genesis/novel_text.txt", "Later/notes.txt", "Later/novel_text.txt"]
    notes = next(d for d in iter_corpus(corpus / "links") if d.path == "Later/notes.txt")
    assert (notes.text, notes.line) == ("Notes on the later chapters.", 3)


def test_symlink_loop_ends(tmp_path: Path) -> None:
    """A link back to a folder above it (and a second link to a file, and a broken link):
    each real file is read once."""
    (tmp_path / "c" / "a").mkdir(parents=True)
    (tmp_path / "c" / "a" / "x.txt").write_text("some text", encoding="utf-8")
    os.symlink(tmp_path / "c", tmp_path / "c" / "a" / "loop")
    os.symlink(tmp_path / "c" / "a" / "x.txt", tmp_path / "c" / "y.txt")
    os.symlink(tmp_path / "nowhere.txt", tmp_path / "c" / "z.txt")
    os.symlink(tmp_path / "c", tmp_path / "c-link")
    for root in ("c", "c-link"):
        assert [d.path for d in iter_corpus(tmp_path / root)] == ["a/x.txt"]


def test_chapter_slices_are_split_chapters_cut_from_the_file() -> None:
    chapters = _kjv(3)
    plain = _book("GENESIS", chapters)
    assert [(t, plain[a:b]) for t, a, b in chapter_slices(plain)] == split_chapters(plain)
    folded = _book("GENESIS", chapters, fold=True)
    mine = [(t, " ".join(folded[a:b].split())) for t, a, b in chapter_slices(folded)]
    assert mine == [(t, " ".join(b.split())) for t, b in split_chapters(folded)]
    assert "CHAPTER XX" in mine[0][1]  # folded into the front matter
    assert chapter_slices("no heading\n") == [("", 0, 10)] and chapter_slices(" \n") == []


def test_old_indexes_never_call_a_document_a_line() -> None:
    """Without ``line`` (an index built before it was recorded), a document is named by its
    number in its file."""
    chapter = {"path": "Emma/novel_text.txt", "linenum": 27,
               "metadata": {"file": "Emma/novel_text.txt", "section": "CHAPTER XXVIII"}}
    assert doc_label(chapter, 5) == "Emma/novel_text.txt section 28 (CHAPTER XXVIII)"
    whole = {"path": "Emma/novel_text.txt", "linenum": 0,
             "metadata": {"file": "Emma/novel_text.txt"}}
    assert doc_label(whole, 5) == "Emma/novel_text.txt"
    kjv = {"path": "kjv", "linenum": 0, "metadata": {"ref": "Genesis 1"}}
    assert doc_label(kjv, 0) == "ref Genesis 1, kjv document 1"
    assert doc_label({}, 7) == "doc 7" and place({"raw": "x"}) == ""
    new = {**chapter, "line": 7301}
    assert doc_label(new, 5) == "Emma/novel_text.txt from line 7301 (CHAPTER XXVIII)"
    assert doc_label(new, 5, [7357, 7360]) == \
        "Emma/novel_text.txt lines 7357-7360 (CHAPTER XXVIII)"
    jsonl = {"path": "c.jsonl", "linenum": 4, "metadata": {}}
    assert doc_label(jsonl, 5) == "c.jsonl line 5"


def test_report_shows_where_the_copies_are(corpus: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The report's tracing section lists the longest spans with their files, lines and
    chapters (the text left out of a redacted report)."""
    from recitation.report.tracing import copies, html, markdown

    rel, cut = _excerpts(corpus / "real")[1]
    (lines, heading) = _brute(corpus / "real", rel, cut)
    _trace(capsys, tmp_path, str(corpus / "real"), [cut], "--chapters",
           definitions="recitation")
    run = next((tmp_path / "runs").iterdir())
    where = f"{rel} lines {lines[0]}-{lines[1]} ({heading})"
    shown = copies(run, redact=False)
    assert shown[0]["documents"] == [where] and shown[0]["text"] in cut
    page = html({"m": {"groups": {}, "copies": shown}})
    assert "Where the longest copies are" in page and where in page
    md = "\n".join(markdown({"m": {"groups": {}, "copies": copies(run, redact=True)}}))
    assert where in md and "(redacted)" in md and shown[0]["text"] not in md
    from recitation.runs.runner import stored_report

    report = {**(stored_report(run) or {}), "copies": shown}  # the definitions it used
    assert "m (definitions: recitation)" in html({"m": report})
    assert "### m (definitions: recitation)" in "\n".join(markdown({"m": report}))
