"""Books as authors have them: UTF-16 / UTF-32 with a byte-order mark are read; an EPUB, a
PDF, a Word file or an archive is refused with the command that converts it; UTF-16 without
a mark is named as such."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from recitation.audit.inputs import load_passages
from recitation.cli import main
from recitation.corpus.files import read_text_file
from recitation.errors import CorpusError

TEXT = ("In the beginning God created the heaven and the earth. And the earth was without "
        "form, and void; and darkness was upon the face of the deep. Café, naïve, “quoted”.\n")


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-8-sig"])
def test_a_book_with_a_byte_order_mark_reads_as_its_utf8_twin(codec: str,
                                                             tmp_path: Path) -> None:
    """Python's codecs write the mark (``utf-16`` and ``utf-32`` in the machine's order;
    the ``-le`` / ``-be`` ones get it added here), as Notepad's "Unicode" does."""
    bom = {"utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff"}.get(codec, b"")
    wide, plain = tmp_path / "wide.txt", tmp_path / "plain.txt"
    wide.write_bytes(bom + TEXT.encode(codec))
    plain.write_bytes(TEXT.encode("utf-8"))
    assert b"\x00" in wide.read_bytes() or codec == "utf-8-sig"
    assert read_text_file(wide) == TEXT
    got, twin = load_passages(str(wide), 12), load_passages(str(plain), 12)
    assert [p.text for p in got] == [p.text for p in twin] and len(got) == 2


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members.items():
            z.writestr(name, data, compress_type=zipfile.ZIP_STORED if name == "mimetype"
                       else zipfile.ZIP_DEFLATED)
    return buf.getvalue()


DOCUMENTS = {
    # an EPUB as the spec writes it: "mimetype" first, stored
    "book.epub": (_zip({"mimetype": b"application/epub+zip",
                        "META-INF/container.xml": b"<container/>",
                        "OEBPS/ch1.xhtml": TEXT.encode()}), ["EPUB e-book", "pandoc"]),
    "book.pdf": (b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n",
                 ["PDF document", "pdftotext"]),
    "book.docx": (_zip({"[Content_Types].xml": b"<Types/>", "word/document.xml": b"<w/>"}),
                  ["Word document", "pandoc FILE.docx"]),
    "book.zip": (_zip({"book.txt": TEXT.encode()}), ["ZIP archive", "unzip"]),
    "book.txt.gz": (b"\x1f\x8b\x08\x00" + bytes(20), ["gzip-compressed", "gunzip"]),
    "no-bom.txt": (TEXT.encode("utf-16-le"), ["UTF-16 text without a byte-order mark",
                                              "iconv -f utf-16le -t utf-8"]),
}


@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_a_document_is_refused_with_the_command_that_converts_it(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, words = DOCUMENTS[name]
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(CorpusError) as e:
        read_text_file(path)
    for w in [name, *words]:
        assert w in str(e.value), (w, str(e.value))
    if name.endswith(".gz"):
        return  # the audit reads a .gz as gzipped JSONL passages
    # the audit refuses it the same way, before anything is created
    code = main(["audit", "--text", str(path), "--model", "scripted:echo", "--runs-dir",
                 str(tmp_path / "runs")])
    out = " ".join(capsys.readouterr().err.split())
    assert code != 0 and words[0] in out and not (tmp_path / "runs").exists()


def test_a_bad_utf16_body_names_its_offset(tmp_path: Path) -> None:
    path = tmp_path / "cut.txt"
    path.write_bytes(b"\xff\xfe" + "abc".encode("utf-16-le") + b"\x00\xd8")  # lone surrogate
    with pytest.raises(CorpusError, match=r"UTF-16-LE byte-order mark but is not valid "
                                          r"UTF-16-LE at byte offset 8"):
        read_text_file(path)


def test_utf16_asked_for_explicitly_is_decoded(tmp_path: Path) -> None:
    path = tmp_path / "le.txt"
    path.write_bytes(TEXT.encode("utf-16-le"))
    assert read_text_file(path, encoding="utf-16-le") == TEXT
