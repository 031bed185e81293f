"""The report section "How much of the book came out" (report/book_extraction.py), from real
``continue`` runs (extract/continue_book.py) driven by a scripted model whose answers are
known chunks of a made-up book: the share, the chapters and the blocks the section shows are
checked against the words the model was given, counted here by hand.

The book: two chapters (320 and 300 words of made-up words, a full stop every 10). The
model, given the opening (the first sentence, words 0-9), answers book words 10-209, then
(from where it stopped) 250-399, then 450-499 (50 words: under the measure's 100), then
unrelated words until the run stops for want of a match. Near-verbatim recall counts
200 + 150 = 350 of the 620 words: 270 in chapter I (200 + 70), 80 in chapter II.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from recitation.models.base import GenerationRequest
from recitation.models.scripted import ScriptedModel
from recitation.report import book_extraction
from recitation.report.book_extraction import SECTION, lines
from recitation.runs import runner
from recitation.runs.config import parse_config

SCRIPT = "<script>window.__pwned=1</script>"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
_RNG = random.Random(50)
_SYLL = ["bra", "del", "fon", "gri", "hul", "kem", "lor", "mis", "nad", "pel", "quo", "rin",
         "sol", "tav", "ulm", "ver", "wix", "yan", "zor", "cat"]


def _chapter(n: int) -> list[str]:
    out = ["".join(_RNG.choice(_SYLL) for _ in range(_RNG.randint(1, 3))) for _ in range(n)]
    return [w + "." if (i + 1) % 10 == 0 else w for i, w in enumerate(out)]


CH1, CH2 = _chapter(320), _chapter(300)
CH1[100] = SCRIPT  # inside the first block: the passage shown holds a tag
BOOK = CH1 + CH2
CHUNKS = {10: (10, 210), 210: (250, 400), 400: (450, 500)}
"""Where the model's last answer (or the opening) ends -> the book words it answers next."""
JUNK = " " + " ".join(f"zq{k}" for k in range(60))
COVERED = (210 - 10) + (400 - 250)  # the two blocks of 100 words or more
SPEC = "scripted:memory"
HEADLINE = ("56.5% of the book extracted near-verbatim (350 of 620 words; longest block 200 "
            "words; 6 calls; stopped: the continuation no longer matched the book)")


def _book_file(tmp_path: Path) -> Path:
    path = tmp_path / "book.txt"
    path.write_text(f"CHAPTER I\n\n{' '.join(CH1)}\n\nCHAPTER II\n\n{' '.join(CH2)}\n",
                    encoding="utf-8")
    return path


def _reply(prompts: list[str]) -> Any:
    """The scripted model: the chunk planned after where the prompt's last 6 words sit in
    the book (every completion prompt ends with the model's own last answer), else junk."""
    def reply(req: GenerationRequest) -> str:
        prompts.append(req.prompt or "")
        tail = (req.prompt or "").split()[-6:]
        for i in range(len(BOOK) - len(tail) + 1):
            if BOOK[i:i + len(tail)] == tail and (i + len(tail)) in CHUNKS:
                a, b = CHUNKS[i + len(tail)]
                return " " + " ".join(BOOK[a:b])
        return JUNK
    return reply


def _audit_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prompts: list[str]
                  ) -> tuple[Path, dict[str, Any]]:
    """A continue run through the real runner, in an audit folder whose manifest names it
    (and a second model without one)."""
    monkeypatch.setattr("recitation.models.registry.build_backend",
                        lambda cfg: ScriptedModel(_reply(prompts)))
    cfg = parse_config({"job": "continue", "name": "t", "seed": 0, "cache": False,
                        "model": {"backend": "scripted"},
                        "params": {"book": str(_book_file(tmp_path)), "mode": "completion",
                                   "opening_words": 10, "max_calls": 10}})
    folder = tmp_path / "audit"
    run = runner.create_run(cfg, folder / "runs")
    assert asyncio.run(runner.execute(run)).status == "completed"
    manifest = {"redact": False, "models": [
        {"spec": SPEC, "runs": {"continue": run.name}},
        {"spec": "scripted:other", "runs": {"prefix_probe": "missing"}}]}
    return folder, manifest


@pytest.fixture
def section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, Any],
                                                                      list[str]]:
    prompts: list[str] = []
    folder, manifest = _audit_folder(tmp_path, monkeypatch, prompts)
    return folder, manifest, prompts


def _passage(a: int, b: int) -> str:
    return " ".join(BOOK[a:b])


def test_the_share_and_where_it_sits_are_the_words_the_model_was_given(
        section: tuple[Path, dict[str, Any], list[str]]) -> None:
    folder, manifest, prompts = section
    data = SECTION.collect(folder, manifest)
    assert data is not None and list(data["models"]) == [SPEC]  # the other has no run
    m = data["models"][SPEC]
    assert (m["covered_words"], m["book_words"]) == (COVERED, len(BOOK)) == (350, 620)
    assert m["nv_recall"] == pytest.approx(COVERED / len(BOOK), abs=1e-4)
    assert m["chapters"] == [{"title": "CHAPTER I", "words": 320, "covered": 270},
                             {"title": "CHAPTER II", "words": 300, "covered": 80}]
    assert [(b["book_start"], b["book_end"]) for b in m["blocks"]] == [(10, 210), (250, 400)]
    assert m["longest_block_words"] == 200 and m["longest_run_words"] == 200
    assert [(p["book_start"], p["book_end"], p["matched_words"]) for p in m["passages"]] == [
        (10, 210, 200), (250, 400, 150)]
    assert [" ".join(p["text"].split()) for p in m["passages"]] == [
        _passage(10, 210), _passage(250, 400)]
    # 1 opening call, 2 more chunks, then 3 junk answers: the window of 3 adds nothing
    assert (m["calls"], m["phase1_attempts"], m["phase1_succeeded"], m["stop_reason"]) == (
        6, 1, True, "no_match")
    assert m["output_tokens"] == 200 + 150 + 50 + 3 * 60
    assert m["input_tokens"] == sum(len(p.split()) for p in prompts) and len(prompts) == 6
    assert m["dollars"] == 0
    json.dumps(data)  # report.json keeps it


def test_markdown_gives_the_share_its_definition_and_a_table_per_chapter(
        section: tuple[Path, dict[str, Any], list[str]]) -> None:
    data = SECTION.collect(*section[:2])
    md = "\n".join(SECTION.markdown(data))
    assert "Near-verbatim recall (Ahmed, Cooper et al. 2026)" in md
    assert "blocks of at least 100 matched words" in md and "not counted" in md
    assert HEADLINE in md
    assert "| CHAPTER I | 320 | 270 | 84.4% |" in md
    assert "| CHAPTER II | 300 | 80 | 26.7% |" in md
    assert "6 calls (1 for the opening, which succeeded)" in md
    assert "tokens in" in md and "$0.0000" in md
    assert "What this number does not mean" in md and "lower bound" in md
    assert "- Blocks shorter than 100 matched words are not counted" in md
    assert _passage(10, 210) in " ".join(md.split())


def _figure(html: str, div_id: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The data and layout of the plotly figure drawn into ``div_id``."""
    match = re.search(r'Plotly\.newPlot\(\s*"' + div_id + r'",\s*', html)
    assert match, html[:2000]
    decode = json.JSONDecoder().raw_decode
    data, end = decode(html, match.end())
    layout, _ = decode(html, html.index("{", end))
    return data, layout


def test_html_escapes_the_passages_and_draws_one_bar_per_block(
        section: tuple[Path, dict[str, Any], list[str]]) -> None:
    data = SECTION.collect(*section[:2])
    html = SECTION.html(data)
    assert SCRIPT not in html and "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html
    assert HEADLINE in html and "What this number does not mean" in html
    assert 'id="book-map-0"' in html
    traces, layout = _figure(html, "book-map-0")
    assert [(t["type"], t["base"], t["x"]) for t in traces] == [
        ("bar", [10], [200]), ("bar", [250], [150])]
    assert [a["text"] for a in layout["annotations"]] == ["CHAPTER I", "CHAPTER II"]
    shapes = layout["shapes"]  # each chapter's stretch of the axis
    assert [(s["x0"], s["x1"]) for s in shapes] == [(0, 320), (320, 620)]


def test_a_redacted_report_shows_the_passages_lengths_only(
        section: tuple[Path, dict[str, Any], list[str]]) -> None:
    folder, manifest, _ = section
    data = SECTION.collect(folder, manifest | {"redact": True})
    assert data is not None
    m = data["models"][SPEC]
    assert [p["text"] for p in m["passages"]] == ["[redacted: 200 words]",
                                                  "[redacted: 150 words]"]
    shown = " ".join([json.dumps(data), *SECTION.markdown(data), SECTION.html(data)])
    for a in range(10, 400, 20):  # no 8 words of the book in a row
        assert _passage(a, a + 8) not in " ".join(shown.split())
    assert "window.__pwned" not in shown
    assert m["covered_words"] == COVERED  # the numbers stay


def test_lines_for_the_console(section: tuple[Path, dict[str, Any], list[str]]) -> None:
    data = SECTION.collect(*section[:2])
    assert lines(data) == [f"whole book (continue), {SPEC}: {HEADLINE}"]


def test_no_continue_run_no_section(tmp_path: Path) -> None:
    manifest = {"redact": False, "models": [
        {"spec": "a", "runs": {"prefix_probe": "p"}},
        {"spec": "b", "runs": {"continue": "not-there"}}]}
    assert SECTION.collect(tmp_path, manifest) is None
    assert book_extraction.collect(tmp_path, {"models": []}) is None


def _run_audit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *more: str) -> Path:
    """``recitation audit --whole-book`` on the book with the scripted model (in a thread of
    its own: Playwright's sync API keeps an event loop running in this one)."""
    from recitation.cli import main

    prompts: list[str] = []
    monkeypatch.setattr("recitation.models.registry.build_backend",
                        lambda cfg: ScriptedModel(_reply(prompts)))
    runs = tmp_path / "runs"
    argv = ["audit", "--text", str(_book_file(tmp_path)), "--model", SPEC, "--whole-book",
            "--whole-book-calls", "10", "--passages", "1", "--recap-passages", "0",
            "--no-pearl", "--no-cache", "--null-model", "none", "--runs-dir", str(runs), *more]
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(main, argv).result() == 0
    return next(runs.glob("audit-*"))


def test_an_audit_prints_the_line_and_writes_the_section(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    folder = _run_audit(tmp_path, monkeypatch)
    out = " ".join(capsys.readouterr().out.split())
    line = f"whole book (continue), {SPEC}: {HEADLINE}"
    assert line in out  # under the verdict table
    findings = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    m = findings["sections"]["book_extraction"]["models"][SPEC]
    assert (m["covered_words"], m["book_words"], m["calls"]) == (COVERED, len(BOOK), 6)
    md = (folder / "report.md").read_text(encoding="utf-8")
    assert "## How much of the book came out" in md and "| CHAPTER II | 300 | 80 |" in md
    html = (folder / "report.html").read_text(encoding="utf-8")
    assert '<a href="#book_extraction">How much of the book came out</a>' in html
    assert SCRIPT not in html
