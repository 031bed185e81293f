"""A made-up report section added as a plug-in: one module (in a temporary folder) and one
line of :data:`recitation.report.sections.SECTIONS`, nothing else edited. It reads the audit
folder alone and appears in ``report.json``, ``report.md`` and ``report.html`` (with the
page's navigation); a section with nothing to show is left out of all three."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from recitation.audit.run import AuditSettings, create_audit, execute_audit
from recitation.cli import main
from recitation.errors import ConfigError
from recitation.report import sections

PLUGIN = '''
"""Words per audited passage, read from the audit's inputs."""
import json
from html import escape

from recitation.report.sections import Section


def collect(folder, manifest):
    lines = (folder / "inputs" / "text.jsonl").read_text(encoding="utf-8").splitlines()
    words = [len(json.loads(x)["text"].split()) for x in lines]
    return {"passages": len(words), "words": sum(words), "label": "<b>all</b>"} if words else None


def markdown(data):
    return [f"{data['passages']} passages, {data['words']} words"]


def html(data):
    return (f"<p id='wc'>{data['passages']} passages, {data['words']} words "
            f"({escape(data['label'])})</p>")


SECTION = Section(name="wordcount", title="Words per passage", collect=collect,
                  markdown=markdown, html=html)
EMPTY = Section(name="empty", title="Nothing here", collect=lambda folder, manifest: None,
                markdown=lambda d: ["never"], html=lambda d: "never")
'''


def test_a_made_up_section_appears_in_every_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        write_plugin: Callable[[str, str], None]) -> None:
    write_plugin("secplug", PLUGIN)
    monkeypatch.setitem(sections.SECTIONS, "wordcount", "secplug:SECTION")  # the one line
    monkeypatch.setitem(sections.SECTIONS, "empty", "secplug:EMPTY")
    text = tmp_path / "t.jsonl"
    text.write_text("".join(json.dumps({"id": i, "text": " ".join(["w"] * 30)}) + "\n"
                            for i in range(3)), encoding="utf-8")
    s = AuditSettings(passage_words=30, pearl=False, cache=False, recap_passages=0,
                      null_model=None)
    folder = create_audit([str(text)], ["scripted:echo"], [], s, runs_dir=tmp_path / "runs")
    execute_audit(folder, say=lambda _: None)
    assert main(["report", str(folder)]) == 0
    f = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    assert f["sections"] == {"wordcount": {"passages": 3, "words": 90, "label": "<b>all</b>"}}
    md = (folder / "report.md").read_text(encoding="utf-8")
    assert "## Words per passage\n\n3 passages, 90 words\n" in md and "Nothing here" not in md
    html = (folder / "report.html").read_text(encoding="utf-8")
    assert '<section id="wordcount"><h2>Words per passage</h2>' in html
    assert "<p id='wc'>3 passages, 90 words (&lt;b&gt;all&lt;/b&gt;)</p>" in html
    assert '<a href="#wordcount">Words per passage</a>' in html and "Nothing here" not in html


def test_a_registry_line_without_its_section_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sections.SECTIONS, "nope", "recitation.report.tracing:NOTE")
    with pytest.raises(ConfigError, match="'recitation.report.tracing:NOTE' holds no Section "
                                          "named 'nope'"):
        sections.sections()
