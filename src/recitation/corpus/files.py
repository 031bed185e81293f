"""Reading the files users bring: the one place where input files are checked.

Every corpus loader reads its text through :func:`read_text_file` (or :func:`decode_text` for
bytes it already holds); :func:`recitation.corpus.books.load_book` is the one entry point
that turns a path into a checked :class:`~recitation.corpus.model.Book`. What is refused,
each with a :class:`~recitation.errors.CorpusError` naming the file and the problem:

* a missing path, a folder where a file was expected, an unreadable file;
* a file larger than ``max_bytes`` (a book: :data:`BOOK_MAX_BYTES`), checked from its size
  before anything is read;
* binary data: a NUL byte (its byte offset is named);
* text that is not valid UTF-8 (the byte offset of the first bad byte is named; a UTF-8
  byte-order mark is allowed), unless another ``encoding`` is asked for explicitly;
* an empty or whitespace-only file (``allow_empty=False``, the default);
"""

from __future__ import annotations

from pathlib import Path

from recitation.errors import CorpusError

BOOK_MAX_BYTES = 64 * 1024 * 1024
"""Largest book file read (64 MiB); the longest novels are under 6 MB."""


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def decode_text(data: bytes, source: str | Path, *, what: str = "text file",
                encoding: str = "utf-8", allow_empty: bool = False, offset: int = 0) -> str:
    """``data`` as text, or :class:`CorpusError` for binary data, bad UTF-8 or no text.

    Byte offsets in messages count from the file's start (``data`` begins at ``offset``)."""
    nul = data.find(b"\x00")
    if nul >= 0:
        raise CorpusError(f"{source}: binary data, not a {what} (NUL byte at byte offset "
                          f"{offset + nul}); give a plain-text file")
    if encoding.lower().replace("_", "-") in ("utf-8", "utf8", "utf-8-sig"):
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
