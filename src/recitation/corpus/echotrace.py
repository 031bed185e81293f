"""EchoTrace books: the RECAP Section Summary Agent's JSON and the extraction files.

A summary file is ``{"book_name", "chapters": [{"chapter_title", "events": [{"title",
"characters", "detailed_summary", "segmentation_boundaries": {"first_sentence",
"last_sentence"}, "text_segment", ...}]}]}``. An extraction file has the same structure and
adds ``LLM_completions`` to each event. Unknown keys are kept in ``extra`` and written back,
so ``dump_echotrace(load_echotrace(path))`` equals the parsed file.

The extraction methods scored by the RECAP release, and how each picks one text per event,
are in :data:`RECAP_METHODS` and :func:`candidate_text`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recitation.corpus.files import read_text_file
from recitation.corpus.model import Book, Chapter, Event, chapter_id, event_id, slugify
from recitation.errors import CorpusError

RECAP_METHODS: tuple[str, ...] = (
    "prefix-probing",
    "simple_agent_extraction",
    "simple_agent_jailbreak",
    "simple_agent_extraction_refined_first",
    "simple_agent_extraction_refined_best_no_jail",
    "simple_agent_extraction_refined_best",
)
"""Method keys of the released Metrics JSON, in the released order."""

BLOCKED = "MODEL_RESPONSE_BLOCKED"
"""What the verifier wrote in place of an extraction it judged a refusal."""

_EVENT_KEYS = ("title", "characters", "detailed_summary", "segmentation_boundaries", "text_segment")
_REFINED = re.compile(r"^simple_agent_extraction_refined_(\d+)$")
_EXTRACTION_NAME = re.compile(r"^(?P<book>.+?)_extraction_(?P<model>.+?)_feedback_(?P<fb>.+)$")


def split_book_name(book_name: str) -> tuple[str, str]:
    """``"A_Christmas_Carol_-_Charles_Dickens"`` -> ``("A Christmas Carol", "Charles Dickens")``."""
    title, sep, author = book_name.partition("_-_")
    return title.replace("_", " "), (author.replace("_", " ") if sep else "")


def _require(obj: Any, key: str, kind: type, where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise CorpusError(f"{where}: missing key {key!r}")
    value = obj[key]
    if not isinstance(value, kind):
        raise CorpusError(f"{where}: {key!r} should be {kind.__name__}, got {type(value).__name__}")
    return value


def _parse_event(raw: Any, ev_id: str, where: str) -> Event:
    if not isinstance(raw, dict):
        raise CorpusError(f"{where}: an event should be an object, got {type(raw).__name__}")
    bounds = raw.get("segmentation_boundaries") or {}
    if not isinstance(bounds, dict):
        raise CorpusError(f"{where}: 'segmentation_boundaries' should be an object")
    text = _require(raw, "text_segment", str, where)
    return Event(
        id=ev_id,
        title=str(raw.get("title", "")),
        characters=[str(c) for c in raw.get("characters") or []],
        summary=[str(s) for s in raw.get("detailed_summary") or []],
        first_sentence=str(bounds.get("first_sentence") or ""),
        last_sentence=str(bounds.get("last_sentence") or ""),
        text=text,
        extra={k: v for k, v in raw.items() if k not in _EVENT_KEYS},
    )


def parse_echotrace(data: Any, *, source: str = "<memory>") -> Book:
    """A :class:`Book` from the parsed JSON of an EchoTrace summary or extraction file."""
    book_name = _require(data, "book_name", str, source)
    chapters_raw = _require(data, "chapters", list, source)
    book_id = slugify(book_name)
    chapters: list[Chapter] = []
    for ci, ch in enumerate(chapters_raw):
        where = f"{source}: chapter {ci}"
        events_raw = _require(ch, "events", list, where)
        cid = chapter_id(book_id, ci)
        events = [
            _parse_event(ev, event_id(cid, ei), f"{where}, event {ei}")
            for ei, ev in enumerate(events_raw)
        ]
        chapters.append(
            Chapter(
                id=cid,
                title=str(ch.get("chapter_title", "")),
                events=events,
                extra={k: v for k, v in ch.items() if k not in ("chapter_title", "events")},
            )
        )
    title, author = split_book_name(book_name)
    extra = {k: v for k, v in data.items() if k not in ("book_name", "chapters")}
    return Book(
        id=book_id,
        title=title,
        author=author,
        source=source,
        chapters=chapters,
        metadata={"book_name": book_name, "format": "echotrace", "extra": extra},
    )


def load_echotrace(path: str | Path) -> Book:
    """Read an EchoTrace summary or extraction JSON file; raises :class:`CorpusError`."""
    p = Path(path)
    text = read_text_file(p, what="EchoTrace file")
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise CorpusError(f"cannot read EchoTrace JSON {p}: {exc}") from None
    return parse_echotrace(data, source=str(p))


def _dump_event(event: Event) -> dict[str, Any]:
    out: dict[str, Any] = {
        "title": event.title,
        "characters": list(event.characters),
        "detailed_summary": list(event.summary),
        "segmentation_boundaries": {
            "first_sentence": event.first_sentence,
            "last_sentence": event.last_sentence,
        },
        "text_segment": event.text,
    }
    out.update(event.extra)
    return out


def dump_echotrace(book: Book) -> dict[str, Any]:
    """The EchoTrace JSON object of a book (inverse of :func:`parse_echotrace`)."""
    book_name = str(book.metadata.get("book_name") or book.id)
    out: dict[str, Any] = {"book_name": book_name, "chapters": []}
    for chapter in book.chapters:
        ch: dict[str, Any] = {"chapter_title": chapter.title}
        ch["events"] = [_dump_event(e) for e in chapter.events]
        ch.update(chapter.extra)
        out["chapters"].append(ch)
    out.update(book.metadata.get("extra") or {})
    return out


def write_echotrace(book: Book, path: str | Path) -> None:
    """Write a book as EchoTrace JSON (UTF-8, not ASCII-escaped, indent 2)."""
    Path(path).write_text(
        json.dumps(dump_echotrace(book), ensure_ascii=False, indent=2), encoding="utf-8"
    )


@dataclass(frozen=True)
class ExtractionFile:
    """An extraction file and what its name says: book, target model, feedback model."""

    path: Path
    book_name: str
    model: str
    feedback_model: str

    @property
    def metrics_name(self) -> str:
        """File name of the released Metrics JSON for this extraction file."""
        return f"{self.book_name}_{self.model}_metrics_feedback_{self.feedback_model}.json"


def parse_extraction_path(path: str | Path) -> ExtractionFile:
    """Split ``<Book>_extraction_<model>_feedback_<feedback model>.json`` into its parts."""
    p = Path(path)
    m = _EXTRACTION_NAME.match(p.stem)
    if not m:
        raise CorpusError(
            f"{p.name}: not an EchoTrace extraction file name "
            "(<Book>_extraction_<model>_feedback_<feedback model>.json)"
        )
    return ExtractionFile(p, m["book"], m["model"], m["fb"])


def find_extraction_files(root: str | Path) -> list[ExtractionFile]:
    """All ``books/<Book>/Extractions/*_extraction_*.json`` files under ``root``, sorted.

    ``root`` may be the echotrace folder, its ``books`` folder or one book's folder.
    """
    base = Path(root)
    if not base.exists():
        raise CorpusError(f"EchoTrace folder not found: {base}")
    files = sorted(base.rglob("Extractions/*_extraction_*.json"))
    return [parse_extraction_path(f) for f in files]


def _as_text(raw: Any) -> str:
    if isinstance(raw, dict):
        return str(raw.get("text") or "").strip()
    return str(raw or "").strip()


def refinements(event: Event) -> dict[int, str]:
    """The feedback-loop attempts ``simple_agent_extraction_refined_<i>`` by index."""
    agent = (event.extra.get("LLM_completions") or {}).get("Agent_Extraction") or {}
    found: dict[int, str] = {}
    for key, value in agent.items():
        m = _REFINED.match(key)
        if m:
            found[int(m.group(1))] = _as_text(value)
    return found


def candidate_text(event: Event, method: str) -> str:
    """The text the RECAP release scores for ``method`` on this event ("" if none).

    Selection as released: ``simple_agent_jailbreak`` falls back to the plain extraction;
    ``refined_best`` is the *last* (highest-numbered) refinement -- not the attempt with the
    highest ROUGE-L, despite the name -- else the jailbreak or plain extraction;
    ``refined_first`` is refinement 1, else 0, else the jailbreak or plain extraction;
    ``refined_best_no_jail`` is the plain extraction when a jailbreak was used, else as
    ``refined_best`` without the jailbreak fallback. Texts are stripped; a blocked
    extraction is scored as its literal ``MODEL_RESPONSE_BLOCKED`` text.
    """
    llm = event.extra.get("LLM_completions") or {}
    agent = llm.get("Agent_Extraction") or {}
    plain = agent.get("simple_agent_extraction")
    jail_or_plain = agent.get("simple_agent_jailbreak", plain)
    refined = refinements(event)
    if method == "prefix-probing":
        return _as_text(llm.get("prefix-probing"))
    if method == "simple_agent_extraction":
        return _as_text(plain)
    if method == "simple_agent_jailbreak":
        return _as_text(jail_or_plain)
    if method == "simple_agent_extraction_refined_best":
        return refined[max(refined)] if refined else _as_text(jail_or_plain)
    if method == "simple_agent_extraction_refined_first":
        for i in (1, 0):
            if i in refined:
                return refined[i]
        return _as_text(jail_or_plain)
    if method == "simple_agent_extraction_refined_best_no_jail":
        if "simple_agent_jailbreak" in agent:
            return _as_text(plain)
        return refined[max(refined)] if refined else _as_text(plain)
    raise CorpusError(f"unknown RECAP method {method!r}; known: {', '.join(RECAP_METHODS)}")
