"""The one file-digest helper (src/recitation/digest.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from recitation.digest import BLOCK, feed_file, file_sha256


def test_a_file_of_several_blocks_hashes_as_its_bytes(tmp_path: Path) -> None:
    data = bytes(range(256)) * (BLOCK // 256 * 2 + 3)  # two blocks and a bit
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    assert file_sha256(path) == file_sha256(str(path)) == hashlib.sha256(data).hexdigest()
    h = hashlib.sha256(b"prefix")
    assert feed_file(path, h) == len(data)
    assert h.hexdigest() == hashlib.sha256(b"prefix" + data).hexdigest()


def test_every_file_digest_in_src_goes_through_the_helper() -> None:
    """No module hashes a whole file itself (``hashlib.sha256(path.read_bytes())`` or a
    block loop of its own)."""
    src = Path(__file__).resolve().parents[1] / "src" / "recitation"
    offenders = [str(p.relative_to(src)) for p in src.rglob("*.py")
                 if p.name != "digest.py" and ("read_bytes()).hexdigest()" in (
                     t := p.read_text(encoding="utf-8")) or "fh.read(1 << 20)" in t)]
    assert offenders == []
