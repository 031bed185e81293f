"""What an audit reads: the audited text and its controls, cut into passages.

``--text`` / ``--controls`` name a plain-text book (``.txt``, Gutenberg licence stripped when
present), a folder of ``.txt`` files, a JSONL file (one passage per line, field ``text``,
optional ``id``), or a built-in set (``kjv:famous-long``, ``builtin:kjv-devotional-long``).
Book text is cut into consecutive passages of ``passage_words`` words (the last, shorter,
dropped) by the corpus layer's one cutter (:mod:`recitation.corpus.passages`, which
``detect`` and ``extract`` read books with too); JSONL passages longer than that are cut to
it. The passages are written to the audit folder as JSONL, and every run of the audit reads
those files, so the audit's input hashes cover exactly what the model saw.

With no ``--controls`` the audit uses a built-in control set only where one fits the text
(:func:`builtin_controls`); otherwise it runs the extraction on the text alone and the
report refuses a verdict.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recitation.corpus.jsonl import iter_records
from recitation.digest import feed_file, file_sha256
from recitation.errors import ConfigError, CorpusError


@dataclass(frozen=True)
class Passage:
    id: str
    text: str
    source: str
    chapter: str = ""  # a book's passages: "<n> <heading>" of the chapter it starts in


@dataclass(frozen=True)
class Controls:
    """The control passages and why they fit (or why there are none)."""

    passages: list[Passage]
    spec: list[str]
    builtin: bool
    reason: str


KJV_CONTROLS_REASON = (
    "built-in controls builtin:kjv-devotional-long: devotional prose in the King James "
    "Bible's English written for this toolkit in 2026 and published nowhere else, after "
    "the training cutoff of the models it audits; same register and length as the audited "
    "KJV passages, so a detector that separates them reacts to having seen the text, not "
    "to its style")


ORGANISM_CONTROLS_REASON = (
    "the organism's held-out passages: drawn from the same novels, in the same proportions, "
    "as its training passages, and never in its fine-tuning data; for the base model they "
    "are as (un)familiar as the training passages, so both sides differ only in training")
ORGANISM_GROUPS = {"members": True, "held-out": False}


def _organism_spec(spec: str) -> tuple[str, bool]:
    """(organism name, member?) of ``organism:[NAME:]members|held-out``."""
    from recitation.organism.paths import DEFAULT_NAME, check_name

    *name, group = spec.split(":")[1:]
    if len(name) > 1 or group not in ORGANISM_GROUPS:
        raise ConfigError(f"'{spec}': an organism's passages are organism:[NAME:]members or "
                          "organism:[NAME:]held-out (e.g. organism:quick:members)")
    return check_name(name[0] if name else DEFAULT_NAME), ORGANISM_GROUPS[group]


def _organism_split(name: str) -> Path:
    """The split file of organism ``name``: the quick one built or reused, another built."""
    from recitation.organism.build import build_organism
    from recitation.organism.config import make_config
    from recitation.organism.paths import QUICK_NAME, organism_dir, read_manifest

    if name == QUICK_NAME:
        return build_organism(make_config(quick=True)).directory / "split.json"
    read_manifest(name)  # not built: the error says how to build it
    return organism_dir(name) / "split.json"


def _from_organism(spec: str, passage_words: int) -> list[Passage]:
    from recitation.organism.data import load_split

    name, member = _organism_spec(spec)
    return [Passage(f"{spec}:{p.id}", _first_words(p.text, passage_words), f"organism:{name}")
            for p in load_split(_organism_split(name)) if p.member == member]


def _first_words(text: str, n: int) -> str:
    """``text`` cut to its first ``n`` words (as it is, spacing kept, when not longer)."""
    words = text.split()
    return " ".join(words[:n]) if len(words) > n else text


def _from_book(path: Path, passage_words: int, stem: str) -> list[Passage]:
    """The corpus layer's one cutter (as ``detect`` and ``extract`` read a book)."""
    from recitation.corpus.passages import book_passages

    return [Passage(f"{stem}:{p.index:05d}", p.text, stem, p.chapter)
            for p in book_passages(path, passage_words)]


def _from_jsonl(path: Path, passage_words: int) -> list[Passage]:
    out = []
    for lineno, rec in iter_records(path):
        text = rec.get("text")
        if not isinstance(text, str) or not text.strip():
            raise CorpusError(f"{path}:{lineno}: needs a non-empty string field 'text'")
        out.append(Passage(f"{path.stem}:{rec.get('id', lineno)}",
                           _first_words(text, passage_words), path.stem))
    return out


def _from_builtin(spec: str, passage_words: int) -> list[Passage]:
    from recitation.detect.samples import load_samples

    return [Passage(s.id, " ".join(s.text.split()[:passage_words]), s.source)
            for s in load_samples(spec, "member")]


def load_passages(spec: str, passage_words: int) -> list[Passage]:
    """The passages a ``--text`` / ``--controls`` argument names (module docstring)."""
    kind = spec.partition(":")[0]
    if kind in ("kjv", "builtin"):
        out = _from_builtin(spec, passage_words)
    elif kind == "organism":
        out = _from_organism(spec, passage_words)
    else:
        p = Path(spec)
        if p.is_dir():
            files = sorted(p.glob("*.txt"))
            if not files:
                raise CorpusError(f"{p}: a folder with no .txt files")
            out = [x for f in files for x in _from_book(f, passage_words, f.stem)]
        elif p.suffix in (".jsonl", ".gz"):
            out = _from_jsonl(p, passage_words)
        elif p.is_file():
            out = _from_book(p, passage_words, p.stem)
        else:
            raise ConfigError(f"'{spec}': no such file or folder (give a .txt book, a folder "
                              "of .txt files, a .jsonl of passages, kjv:... or builtin:...)")
    out = [x for x in out if len(x.text.split()) >= 8]
    if not out:
        from recitation.audit.notices import no_passage_message

        raise CorpusError(no_passage_message(spec, passage_words))
    return out


def pick(passages: list[Passage], limit: int) -> list[Passage]:
    """``limit`` passages spread evenly over the text (all when fewer; 0 = all)."""
    if limit <= 0 or len(passages) <= limit:
        return passages
    step = len(passages) / limit
    return [passages[int(i * step)] for i in range(limit)]


def given_controls_reason(specs: list[str]) -> str:
    """Why controls the user named fit: an organism's held-out passages say why; others are
    the user's word."""
    if specs and all(s.startswith("organism:") and s.endswith(":held-out") for s in specs):
        return ORGANISM_CONTROLS_REASON
    return "controls given with --controls (text the model cannot have seen)"


def builtin_controls(text_specs: list[str], passage_words: int) -> Controls:
    """Built-in controls that fit the text, or none (with the reason)."""
    if text_specs and all(s.startswith("kjv:") for s in text_specs):
        spec = "builtin:kjv-devotional-long"
        return Controls(load_passages(spec, passage_words), [spec], True, KJV_CONTROLS_REASON)
    return Controls([], [], True, (
        "no --controls given and no built-in control set fits this text (the built-in sets "
        "are KJV-style prose written after the models' cutoff: they fit only kjv:... texts); "
        "without text the model cannot have seen, in the same genre and era, nothing tells "
        "memorization from a model that is simply good at this kind of text, so the "
        "detectors are not run; verbatim reproduction is judged against a reference model "
        "that cannot have memorized the text (--null-model). Pass --controls with such text "
        "(e.g. passages written after the model's training cutoff, or held out of its "
        "fine-tuning) for the detectors' verdict"))


def write_jsonl(path: Path, passages: list[Passage], group: str) -> dict[str, Any]:
    """Write the passages; return the file's provenance (path, count, SHA-256)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for p in passages:
            fh.write(json.dumps({"id": p.id, "text": p.text, "group": group,
                                 "source": p.source}, ensure_ascii=False) + "\n")
    return {"path": path.name, "passages": len(passages), "sha256": file_sha256(path)}


def spec_hashes(specs: list[str]) -> dict[str, str | None]:
    """SHA-256 of each user file named (folders: of their .txt files in order; an organism's
    passages: of its split file)."""
    out: dict[str, str | None] = {}
    for s in specs:
        p = Path(s)
        if s.startswith("organism:"):  # read by load_passages before: built
            from recitation.organism.paths import organism_dir

            out[s] = file_sha256(organism_dir(_organism_spec(s)[0]) / "split.json")
        elif p.is_file():
            out[s] = file_sha256(p)
        elif p.is_dir():
            h = hashlib.sha256()
            for f in sorted(p.glob("*.txt")):
                h.update(f.name.encode() + b"\0")
                feed_file(f, h)
            out[s] = h.hexdigest()
        else:
            out[s] = None  # a built-in set, installed with the toolkit
    return out
