"""Reading the files users bring: the one place where input files are checked.

Every corpus loader reads its text through :func:`read_text_file` (or :func:`decode_text` for
bytes it already holds); :func:`recitation.corpus.books.load_book` is the one entry point
that turns a path into a checked :class:`~recitation.corpus.model.Book`. What is refused,
each with a :class:`~recitation.errors.CorpusError` naming the file and the problem:

* a missing path, a folder where a file was expected, an unreadable file;
* a file larger than ``max_bytes`` (a book: :data:`BOOK_MAX_BYTES`), checked from its size
  before anything is read;
* an e-book or document format (EPUB, PDF, Word, another ZIP or gzip archive), recognised
  from its first bytes, with the command that converts it to plain text;
* binary data: a NUL byte (its byte offset is named; UTF-16 without a byte-order mark is
  named as such, with the command that converts it);
* text that is not valid UTF-8 (the byte offset of the first bad byte is named), unless
  another ``encoding`` is asked for explicitly. A byte-order mark says the encoding: UTF-8,
  UTF-16 and UTF-32 (either byte order) with one are read, as Windows editors save them;
* an empty or whitespace-only file (``allow_empty=False``, the default);
"""

from __future__ import annotations

from pathlib import Path

from recitation.errors import CorpusError

BOOK_MAX_BYTES = 64 * 1024 * 1024
"""Largest book file read (64 MiB); the longest novels are under 6 MB."""


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


_BOMS = ((b"\xff\xfe\x00\x00", "utf-32-le"), (b"\x00\x00\xfe\xff", "utf-32-be"),
         (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))
"""Byte-order marks of the wide encodings (UTF-32's first: its little-endian mark begins
with UTF-16's)."""

_CONVERT = {
    "EPUB e-book": "pandoc FILE.epub -t plain -o FILE.txt (or Calibre: ebook-convert "
                   "FILE.epub FILE.txt)",
    "PDF document": "pdftotext -layout FILE.pdf FILE.txt (poppler-utils)",
    "Word document": "pandoc FILE.docx -t plain -o FILE.txt",
    "ZIP archive": "unzip it and give the .txt file inside",
    "gzip-compressed file": "gunzip it first (gunzip -k FILE.gz)",
}


def _format_of(data: bytes) -> str | None:
    """The document format ``data`` starts with, if it is one users mistake for text."""
    if data.startswith(b"%PDF-"):
        return "PDF document"
    if data.startswith(b"\x1f\x8b"):
        return "gzip-compressed file"
    if data.startswith(b"PK\x03\x04"):
        head = data[:4096]
        if b"mimetypeapplication/epub+zip" in head or b"META-INF/container.xml" in head:
            return "EPUB e-book"
        return "Word document" if b"word/" in head else "ZIP archive"
    return None


def _refuse_binary(data: bytes, source: str | Path, what: str, offset: int,
                   nul_check: bool) -> None:
    if (kind := _format_of(data)) is not None and offset == 0:
        raise CorpusError(f"{source}: a {kind}, not a plain-text {what}; convert it first: "
                          f"{_CONVERT[kind]}")
    nul = data.find(b"\x00")
    if nul < 0 or not nul_check:  # UTF-16 / UTF-32 asked for explicitly: NULs are text
        return
    sample = data[:4096]
    if len(sample) >= 4 and (sample[1::2].count(0) > 0.4 * len(sample) / 2
                             or sample[0::2].count(0) > 0.4 * len(sample) / 2):
        order = "le" if sample[1::2].count(0) >= sample[0::2].count(0) else "be"
        raise CorpusError(f"{source}: looks like UTF-16 text without a byte-order mark (NUL "
                          f"byte at byte offset {offset + nul}); convert it: iconv -f "
                          f"utf-16{order} -t utf-8 FILE > FILE.utf8.txt")
    raise CorpusError(f"{source}: binary data, not a {what} (NUL byte at byte offset "
                      f"{offset + nul}); give a plain-text file")


def _decode_wide(data: bytes, source: str | Path) -> str | None:
    """``data`` decoded by its UTF-16 / UTF-32 byte-order mark (None: it has none)."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                return data[len(bom):].decode(codec)
            except UnicodeDecodeError as e:
                raise CorpusError(
                    f"{source}: starts with a {codec.upper()} byte-order mark but is not valid "
                    f"{codec.upper()} at byte offset {len(bom) + e.start}: {e.reason}; save "
                    "it again as UTF-8") from None
    return None


def decode_text(data: bytes, source: str | Path, *, what: str = "text file",
                encoding: str = "utf-8", allow_empty: bool = False, offset: int = 0) -> str:
    """``data`` as text, or :class:`CorpusError` for a document format, binary data, bad
    UTF-8 or no text.

    Byte offsets in messages count from the file's start (``data`` begins at ``offset``)."""
    utf8 = encoding.lower().replace("_", "-") in ("utf-8", "utf8", "utf-8-sig")
    wide = _decode_wide(data, source) if utf8 and offset == 0 else None
    if wide is not None:
        return _nonempty(wide, source, what, allow_empty)
    wide_codec = encoding.lower().replace("_", "-").startswith(("utf-16", "utf16", "utf-32",
                                                                 "utf32"))
    _refuse_binary(data, source, what, offset, nul_check=not wide_codec)
    if utf8:
        bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
        try:
            text = data[bom:].decode("utf-8")
        except UnicodeDecodeError as e:
            at = bom + e.start
            raise CorpusError(
                f"{source}: not valid UTF-8 at byte offset {offset + at} (byte 0x{data[at]:02x}): "
                f"{e.reason}; convert the {what} to UTF-8 (e.g. `iconv -f latin1 -t utf-8`)"
            ) from None
    else:
        try:
            text = data.decode(encoding)
        except (LookupError, UnicodeDecodeError) as e:
            raise CorpusError(f"{source}: cannot decode as {encoding}: {e}") from None
    return _nonempty(text, source, what, allow_empty)


def _nonempty(text: str, source: str | Path, what: str, allow_empty: bool) -> str:
    if not allow_empty and not text.strip():
        raise CorpusError(f"{source}: the {what} is empty (no text to audit)")
    return text


def read_bytes(path: str | Path, *, what: str = "text file",
               max_bytes: int | None = BOOK_MAX_BYTES) -> bytes:
    """The bytes of ``path`` after the existence, kind and size checks."""
    p = Path(path)
    try:
        if not p.exists():
            raise CorpusError(f"{what} not found: {p}")
        if p.is_dir():
            raise CorpusError(f"{p} is a folder; expected a {what}")
        size = p.stat().st_size
        if max_bytes is not None and size > max_bytes:
            raise CorpusError(
                f"{p}: the {what} is {_mb(size)}, more than the {_mb(max_bytes)} allowed; "
                f"split it into smaller files")
        return p.read_bytes()
    except OSError as e:
        raise CorpusError(f"cannot read {p}: {e.strerror or e}") from None


def read_text_file(path: str | Path, *, what: str = "text file", encoding: str = "utf-8",
                   allow_empty: bool = False, max_bytes: int | None = BOOK_MAX_BYTES) -> str:
    """The text of ``path``, checked as the module docstring says."""
    data = read_bytes(path, what=what, max_bytes=max_bytes)
    return decode_text(data, Path(path), what=what, encoding=encoding, allow_empty=allow_empty)


__all__ = ["BOOK_MAX_BYTES", "decode_text", "read_bytes", "read_text_file"]
