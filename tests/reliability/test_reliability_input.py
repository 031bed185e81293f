"""Bad input: each gets a clear error naming the file and the problem (or, inside a run, is
recorded and skipped). Files checked in one place: recitation.corpus.files / books."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

from recitation.cli import main
from recitation.corpus.books import load_book
from recitation.corpus.echotrace import load_echotrace
from recitation.corpus.files import BOOK_MAX_BYTES, read_text_file
from recitation.corpus.jsonl import load_jsonl
from recitation.corpus.latex import load_latex
from recitation.corpus.model import Chapter
from recitation.corpus.pdnc import load_pdnc_novel
from recitation.errors import CorpusError
from recitation.extract.summary import SectionSummaryAgent, SummaryConfig
from recitation.models.scripted import ScriptedModel

# Public domain (KJV, Genesis 1).
GENESIS = ("In the beginning God created the heaven and the earth. And the earth was without "
           "form, and void; and darkness was upon the face of the deep. And the Spirit of God "
           "moved upon the face of the waters. And God said, Let there be light: and there "
           "was light.\n")


def extract_cli(book: Path, runs: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["extract", "--book", str(book), "--target", "smollm2", "--runs-dir", str(runs)])
    cap = capsys.readouterr()
    return code, " ".join((cap.out + cap.err).split())  # rich wraps long lines


BAD_BOOKS: dict[str, tuple[bytes, list[str]]] = {
    "empty.txt": (b"", ["empty.txt", "empty"]),
    "blank.txt": (b"  \n\n\t \n", ["blank.txt", "empty"]),
    # random bytes: the NUL at offset 5 is the first sign of binary data
    "random.bin": (b"\x89PNG\r\x00\x1a\n" + bytes(range(256)) * 12, ["random.bin", "binary",
                                                                       "byte offset 5"]),
    "latin1.txt": (GENESIS.encode() + "caf\xe9 au lait\n".encode("latin-1"),
                   ["latin1.txt", "not valid UTF-8", f"byte offset {len(GENESIS) + 3}",
                    "0xe9"]),
    "cut.txt": (GENESIS.encode() + "naïve".encode()[:-3], ["cut.txt", "not valid UTF-8",
                                                          f"byte offset {len(GENESIS) + 2}"]),
    "empty.json": (b"", ["empty.json", "empty"]),
    "list.json": (b"[1, 2]", ["list.json", "missing key 'book_name'"]),
    "deep.json": (b"[" * 100_000, ["deep.json", "cannot read EchoTrace JSON"]),
    "empty.tex": (b"\\documentclass{article}\\begin{document}\\end{document}",
                  ["empty.tex", "no text"]),
}


@pytest.mark.parametrize("name", list(BAD_BOOKS))
def test_extract_refuses_bad_book_before_any_run(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, words = BAD_BOOKS[name]
    book = tmp_path / name
    book.write_bytes(data)
    code, out = extract_cli(book, tmp_path / "runs", capsys)
    assert code == 1
    for w in ["error", *words]:
        assert w in out, (w, out)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_missing_book_and_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="book not found: .*nope.txt"):
        load_book(tmp_path / "nope.txt")
    (tmp_path / "a.txt").write_text(GENESIS)
    with pytest.raises(CorpusError, match="unknown book format 'docx'"):
        load_book(tmp_path / "a.txt", "docx")
    with pytest.raises(CorpusError, match="is a folder"):
        read_text_file(tmp_path)


def test_200mb_single_line_is_refused_from_its_size(tmp_path: Path) -> None:
    big = tmp_path / "oneline.txt"
    chunk = b"word " * 200_000  # 1 MB, no newline anywhere
    with big.open("wb") as fh:
        for _ in range(200):
            fh.write(chunk)
    assert big.stat().st_size == 200_000_000 > BOOK_MAX_BYTES
    with pytest.raises(CorpusError, match=r"oneline.txt: the text file is 200.0 MB, more than "
                                          r"the 67.1 MB allowed"):
        load_book(big)
    big.unlink()  # pytest keeps the last runs' tmp folders: no 200 MB left behind
    # within the limit a single long line is read as one chapter (no per-line limit)
    small = tmp_path / "small.txt"
    small.write_bytes(chunk * 4)
    book = load_book(small)
    assert len(book.chapters) == 1 and len(book.chapters[0].text) == 4_000_000 - 1


def test_jsonl_bad_utf8_names_line_and_absolute_offset(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    line1 = json.dumps({"text": GENESIS}).encode() + b"\n"
    p.write_bytes(line1 + b'{"text": "caf\xe9"}\n')
    with pytest.raises(CorpusError, match=rf"c.jsonl:2: not valid UTF-8 at byte offset "
                                          rf"{len(line1) + 13}"):
        load_jsonl(p)
    p.write_bytes(line1 + b"[" * 50_000 + b"\n")
    with pytest.raises(CorpusError, match="c.jsonl:2: not valid JSON"):
        load_jsonl(p)


ECHOTRACE_BAD: dict[str, tuple[object, str]] = {
    "no chapters": ({"book_name": "B"}, "missing key 'chapters'"),
    "chapters not list": ({"book_name": "B", "chapters": {}}, "'chapters' should be list"),
    "event not object": ({"book_name": "B", "chapters": [{"events": [3]}]},
                         "chapter 0, event 0: an event should be an object"),
    "text not string": ({"book_name": "B", "chapters": [{"events": [{"text_segment": 1}]}]},
                        "'text_segment' should be str"),
    "bounds not object": ({"book_name": "B", "chapters": [{"events": [
        {"text_segment": "x", "segmentation_boundaries": [1]}]}]},
        "'segmentation_boundaries' should be an object"),
}


@pytest.mark.parametrize("case", list(ECHOTRACE_BAD))
def test_malformed_echotrace(case: str, tmp_path: Path) -> None:
    doc, msg = ECHOTRACE_BAD[case]
    p = tmp_path / "book.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(CorpusError, match=msg) as e:
        load_echotrace(p)
    assert "book.json" in str(e.value)


def pdnc_folder(tmp_path: Path, quotes: str, chars: str = "Character ID,Main Name,Aliases\n"
                "0,Adam,{'Adam'}\n", text: bytes = GENESIS.encode()) -> Path:
    d = tmp_path / "Novel"
    d.mkdir(exist_ok=True)
    (d / "novel_text.txt").write_bytes(text)
    (d / "quotation_info.csv").write_text(
        "quoteID,quoteText,quoteByteSpans,speaker,addressees\n" + quotes)
    (d / "character_info.csv").write_text(chars)
    return d


PDNC_BAD: dict[str, tuple[dict[str, object], str]] = {
    "spans not pairs": ({"quotes": 'Q0,light,"[1, 2]",Adam,[]\n'},
                        "quotation_info.csv row 2: quoteByteSpans should be a list of"),
    "spans unparsable": ({"quotes": 'Q0,light,"[[1, 2",Adam,[]\n'},
                         "quotation_info.csv row 2: cannot parse"),
    "negative span": ({"quotes": 'Q0,light,"[[5, 1]]",Adam,[]\n'}, "are not valid spans"),
    "short row": ({"quotes": "Q0,light\n"}, "row 2: 5 columns expected"),
    "aliases not a set": ({"quotes": "", "chars": "Character ID,Main Name,Aliases\n0,A,3\n"},
                          "Aliases should be a set or list literal"),
    "NUL in csv": ({"quotes": "Q0,\x00,[],A,[]\n"}, "binary data"),
    "novel not UTF-8": ({"quotes": "", "text": b"caf\xe9"}, "novel_text.txt: not valid UTF-8 "
                                                            "at byte offset 3"),
    "novel empty": ({"quotes": "", "text": b""}, "novel_text.txt: the PDNC novel text is empty"),
}


@pytest.mark.parametrize("case", list(PDNC_BAD))
def test_malformed_pdnc(case: str, tmp_path: Path) -> None:
    kw, msg = PDNC_BAD[case]
    d = pdnc_folder(tmp_path, **kw)  # type: ignore[arg-type]
    with pytest.raises(CorpusError, match=msg):
        load_pdnc_novel(d)


def test_pdnc_missing_file(tmp_path: Path) -> None:
    d = pdnc_folder(tmp_path, "")
    assert load_pdnc_novel(d).book.chapters
    (d / "character_info.csv").unlink()
    with pytest.raises(CorpusError, match="PDNC file missing: .*character_info.csv"):
        load_pdnc_novel(d)


def test_latex_cycle_missing_include_and_macro_bomb(tmp_path: Path,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "main.tex").write_text(
        "\\documentclass{article}\\begin{document}\\section{A}" + GENESIS
        + "\\input{a}\\input{gone}\\end{document}")
    (tmp_path / "a.tex").write_text("\\input{b}")
    (tmp_path / "b.tex").write_text("\\input{a}")
    with pytest.raises(CorpusError, match=r"LaTeX inclusion cycle: main.tex -> a.tex -> "
                                          r"b.tex -> a.tex"):
        load_latex(tmp_path)
    (tmp_path / "b.tex").write_text("And God saw the light.")
    book = load_latex(tmp_path)
    assert "God saw the light" in book.text
    assert "\\input{gone} not found; skipped" in caplog.text  # named, not silent
    bomb = "".join(f"\\newcommand{{\\m{chr(97 + i)}}}{{" + f"\\m{chr(98 + i)}" * 8 + "}"
                   for i in range(12))
    (tmp_path / "main.tex").write_text(
        f"\\documentclass{{article}}{bomb}\\begin{{document}}\\ma\\end{{document}}")
    (tmp_path / "a.tex").unlink()
    with pytest.raises(CorpusError, match="macro expansion grows without bound"):
        load_latex(tmp_path / "main.tex")
    with pytest.raises(CorpusError, match="LaTeX source not found"):
        load_latex(tmp_path / "nope")


LOCAL = {"backend": "local", "model": "smollm2"}


@pytest.mark.parametrize("cfg,words", [
    ({"job": "prefix_probe", "model": {"backend": "openai", "model": "x",
                                       "concurrency": "many"}},
     ["model.concurrency", "valid integer"]),
    ({"job": "prefix_probe", "model": LOCAL, "budget": {"max_tokens": "lots"}},
     ["budget.max_tokens"]),
    ({"job": "no_such_job", "model": LOCAL}, ["no_such_job"]),
    ({"job": "prefix_probe", "model": {"backend": "local", "model": "no-such-model"}},
     ["no-such-model"]),
    ({"job": "prefix_probe", "model": {"backend": "nosuch", "model": "m"}},
     ["model.backend", "unknown backend 'nosuch'; choose from local, openai"]),
])
def test_bad_configs_and_model_names_are_clear_errors(
    cfg: dict[str, object], words: list[str], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "c.jsonl").write_text(json.dumps({"text": GENESIS}) + "\n")
    cfg = cfg | {"params": {"source": "jsonl", "path": str(tmp_path / "c.jsonl")}}
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(cfg))
    code = main(["run", str(tmp_path / "run.yaml"), "--runs-dir", str(tmp_path / "runs")])
    cap = capsys.readouterr()
    out = " ".join((cap.out + cap.err).split())
    assert code == 1 and "error" in out
    for w in words:
        assert w in out, (w, out)


BAD_REPLIES = {
    "empty": "",
    "not JSON": "I am sorry, I cannot help with that.",
    "wrong schema": json.dumps({"events": [{"name": "x"}], "extra": 1}),
    "nested 100k": "[" * 100_000,
    "100k tokens": "the " * 100_000,
    "truncated JSON": '{"events": [{"title": "A", "segmentation_boundaries": {"first_sen',
}


@pytest.mark.parametrize("kind", list(BAD_REPLIES))
def test_bad_helper_replies_are_recorded_and_fall_back(kind: str) -> None:
    """The summary agent retries a bad reply, then falls back to paragraph groups: the
    chapter is still segmented and every problem is recorded, nothing raised."""
    helper = ScriptedModel(lambda r: BAD_REPLIES[kind])
    agent = SectionSummaryAgent(helper, SummaryConfig(max_attempts=2, max_tokens=10**6))
    chapter = Chapter(id="c0", title="Genesis", text=(GENESIS + "\n") * 8)
    seg = asyncio.run(agent.segment(chapter))
    assert seg.method == "fallback" and seg.events
    assert len(seg.issues) == 2 and all(i.startswith("attempt ") for i in seg.issues)
    assert len(helper.requests) == 2
    assert "".join(e.text for e in seg.events).split() == chapter.text.split()
