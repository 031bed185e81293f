"""The whole book by continuation inside an audit (``recitation audit --whole-book``).

One ``continue`` run per model (:mod:`recitation.extract.continue_book`) on the audit's
first ``--text`` that is a book: a text, Gutenberg, EchoTrace or LaTeX file, or a PDNC
novel's folder (a ``.jsonl`` of passages or a built-in set is no book: the run is left out,
with the reason in the manifest). The mode follows the model as prefix probing's does
(completion for a model that takes raw text, chat otherwise); calls and reply length are
the audit's ``whole_book_calls`` and ``whole_book_tokens``; the other options are the job's
defaults, the paper's procedure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recitation.runs.config import parse_config

RUN_KEY = "continue"


def book_of(text_specs: list[str]) -> str | None:
    """The first spec that names a book (module docstring), else None."""
    for spec in text_specs:
        p = Path(spec)
        if p.is_file() and p.suffix.lower() != ".jsonl":
            return str(p.resolve())
        if p.is_dir() and (p / "novel_text.txt").is_file():
            return str(p.resolve())
    return None


def continue_config(book: str, model: dict[str, Any], settings: Any, mode: str) -> Any:
    params = {"book": book, "mode": mode, "max_calls": settings.whole_book_calls,
              "max_new_tokens": settings.whole_book_tokens}
    return parse_config({"job": "continue", "name": "audit-continue", "seed": settings.seed,
                         "model": model, "cache": settings.cache, "params": params},
                        source="audit")


def create_continue_run(text_specs: list[str], runs: Path, model: dict[str, Any],
                        settings: Any, entry: dict[str, Any], mode: str) -> None:
    """The model's continue run, or the reason there is none in ``entry["skipped"]``."""
    from recitation.runs.runner import create_run

    book = book_of(text_specs)
    if book is None:
        entry["skipped"][RUN_KEY] = ("--whole-book needs a book as --text (a text, "
                                     "Gutenberg, EchoTrace or LaTeX file, or a PDNC folder)")
        return
    entry["runs"][RUN_KEY] = create_run(continue_config(book, model, settings, mode),
                                        runs).name
