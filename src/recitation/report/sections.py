"""Report sections as plug-ins: a section is one module with a :class:`Section` and one line
in :data:`SECTIONS` (or, from another package, a ``recitation.sections`` entry point).

A section reads what it shows from the audit folder alone (its run stores, through
``collect``), returns JSON-serializable data (kept in ``report.json`` under
``sections[name]``) or None when it has nothing to show, and renders that data for
``report.md`` and ``report.html``. The HTML it returns is markup: every text from a model,
a run or a user file must go through :func:`markupsafe.escape` (the page is autoescaped
everywhere else). docs/adding-a-report-section.md walks through one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recitation.errors import ConfigError
from recitation.registry import Registry, paths


@dataclass(frozen=True)
class Section:
    name: str  # its key in report.json's "sections" and its HTML id
    title: str
    collect: Callable[[Path, dict[str, Any]], Any]  # (audit folder, manifest) -> data | None
    markdown: Callable[[Any], list[str]]  # data -> Markdown lines (under "## title")
    html: Callable[[Any], str]  # data -> escaped HTML (inside <section><h2>title</h2>)


SECTIONS: dict[str, str] = {
    "whole_book": "recitation.report.whole_book:SECTION",
    "book_extraction": "recitation.report.book_extraction:SECTION",
    "catalogue": "recitation.report.catalogue:SECTION",
    "tracing": "recitation.report.tracing:SECTION",
    "dataset_inference": "recitation.report.inference:SECTION",
    "blind_baseline": "recitation.report.blind:SECTION",
    "logprob_check": "recitation.report.logprob_check:SECTION",
}
"""name -> ``module:attr`` of its :class:`Section`, in the order the reports show them
(after the verdict and each model's details)."""

REGISTRY: Registry[str] = paths("report section", SECTIONS)
""":data:`SECTIONS`, then the ``recitation.sections`` entry points of other packages
(:mod:`recitation.registry`), shown after the built-in ones."""


def sections() -> list[Section]:
    """The registered sections (their modules imported now)."""
    out = []
    for name, path in REGISTRY.entries().items():
        sec = REGISTRY.load(name)
        if not isinstance(sec, Section) or sec.name != name:
            where = REGISTRY.origin(name) or f"'{path}'"
            raise ConfigError(f"report section registry: {where} holds no Section "
                              f"named '{name}'")
        out.append(sec)
    return out


def collect_sections(folder: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """Each section's data, for the sections that have something to show."""
    return {s.name: data for s in sections()
            if (data := s.collect(folder, manifest)) is not None}


def markdown_sections(findings: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for s in sections():
        if s.name in findings.get("sections", {}):
            lines += [f"## {s.title}", "", *s.markdown(findings["sections"][s.name]), ""]
    return lines


def html_sections(findings: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(name, title, markup)`` of each section with data."""
    return [(s.name, s.title, s.html(findings["sections"][s.name])) for s in sections()
            if s.name in findings.get("sections", {})]
