"""The HTML report opened in a real browser: Debian's chromium, driven by Playwright through
its executable path (``scripts/test.sh`` installs it; ``playwright install`` is never run).

One real audit, the session's demo (the embedded model and the quick organism, 4 training
passages against 4 held-out ones, white-box detectors, prefix probing and RECAP), gives the
report the browser opens; a scripted audit whose
text, hence the model's echoed reply, holds a ``<script>`` tag checks the escaping.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from recitation.cli import main

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
SCRIPT = "<script>window.__pwned=1</script>"


@pytest.fixture(scope="module")
def browser(require: Any) -> Iterator[Any]:
    require(shutil.which("chromium") is not None or Path(CHROMIUM).exists(),
            "Debian's chromium is not installed: bash scripts/test.sh installs it "
            "(apt-get install chromium)")
    playwright = require.module("playwright.sync_api", "pip install -e '.[dev]' (bash "
                                "scripts/test.sh installs it; never `playwright install`)")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def _open(browser: Any, path: Path) -> tuple[Any, list[str]]:
    errors: list[str] = []
    page = browser.new_page()
    # Playwright's 30 s default ran out loading a report on a 2-core machine under load (a
    # fresh-clone run beside a benchmark, 2026-11-29): what renders is under test, not how fast
    page.set_default_timeout(300_000)
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: errors.append(f"network: {r.url}")
            if not r.url.startswith(("file:", "data:", "about:")) else None)
    page.goto(path.resolve().as_uri())
    page.wait_for_load_state("load")
    return page, errors


def _audit(tmp: Path, *argv: str) -> Path:
    """Run an audit in a thread of its own: Playwright's sync API keeps an event loop
    running in this one."""
    runs = tmp / "runs"
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(main, ["audit", *argv, "--runs-dir", str(runs)]).result() == 0
    return next(runs.glob("audit-*"))


@pytest.fixture(scope="module")
def organism_audit(demo_audit: tuple[Path, str]) -> Path:
    """The audit folder of the session's real demo (conftest.py): the embedded model and the
    quick organism on 4 of its training passages against 4 held-out ones, prefix probing,
    white-box detectors and RECAP."""
    _, out = demo_audit
    match = re.search(r"report: (\S+report\.html)", out)
    assert match, out
    return Path(match.group(1)).parent


def _organism(findings: dict[str, Any]) -> dict[str, Any]:
    m: dict[str, Any] = next(m for m in findings["models"]
                             if m["spec"] == "organism:quick:epoch2")
    return m


@pytest.mark.model
@pytest.mark.slow
def test_report_renders_in_chromium(browser: Any, organism_audit: Path) -> None:
    findings = json.loads((organism_audit / "report.json").read_text(encoding="utf-8"))
    m = _organism(findings)
    assert m["extraction"]["text"]["reproduced"] >= 1  # the organism recites its passages
    assert m["verdict"]["label"].startswith("memorized")
    page, errors = _open(browser, organism_audit / "report.html")
    charts = page.eval_on_selector_all(".js-plotly-plot", """els => els.map(e => ({
        id: e.id, traces: (e.data || []).length,
        points: (e.data || []).reduce((n, t) => n + ((t.x || t.y || []).length), 0),
        svg: e.querySelectorAll('svg.main-svg').length,
        h: e.getBoundingClientRect().height}))""")
    ids = {c["id"] for c in charts}
    assert {"chart-rouge", "chart-passages", "chart-feedback", "chart-scores", "chart-roc",
            "chart-spans", "chart-cost"} <= ids
    for c in charts:
        assert c["traces"] > 0 and c["points"] > 0 and c["svg"] > 0 and c["h"] > 100, c
    assert errors == []

    ev = next(e for e in m["evidence"] if e["highlights"])
    model = f'[data-model="{m["spec"]}"]'  # both models of the demo have evidence
    sel = f'details.evidence{model}[data-id="{ev["id"]}"]'
    assert page.eval_on_selector(sel, "d => d.open") is False
    page.click(f"{sel} > summary")
    assert page.eval_on_selector(sel, "d => d.open") is True
    assert page.is_visible(f"{sel} pre.gold")
    shown = page.eval_on_selector_all(f"{sel} pre.gold mark.span",
                                      "ms => ms.map(m => m.textContent)")
    assert shown == [ev["gold"][s["gold_start"]:s["gold_end"]] for s in ev["highlights"]]
    cand = page.eval_on_selector_all(f"{sel} pre.attempt mark.span",
                                     "ms => ms.map(m => m.textContent)")
    assert cand == [ev["attempt"][s["cand_start"]:s["cand_end"]] for s in ev["highlights"]]
    gold_text = page.inner_text(f"{sel} pre.gold")
    assert gold_text == ev["gold"]  # marks cut the text, never change it

    # RECAP's evidence: the gold passage's classes (first / after feedback / lost) as computed
    rec = m["recap"]["evidence"][0]
    sel = (f'details.evidence.recap{model}[data-id="{rec["id"]}"]'
           f'[data-group="{rec["group"]}"]')
    page.click(f"{sel} > summary")
    assert page.eval_on_selector(sel, "d => d.open") is True
    shown = page.eval_on_selector_all(f"{sel} pre.gold mark", """ms => ms.map(m =>
        [m.className.replace('span-', ''), m.textContent])""")
    assert shown == [[g["cls"], g["text"]] for g in rec["gold_marks"] if g["cls"]]
    assert page.inner_text(f"{sel} pre.gold") == rec["gold"]
    assert page.inner_text(f"{sel} pre.first-attempt") == rec["first_attempt"]
    page.close()


@pytest.mark.model
@pytest.mark.slow
def test_redacted_report_holds_no_gold_sentence(browser: Any, organism_audit: Path) -> None:
    assert main(["report", str(organism_audit), "--redact"]) == 0
    full = json.loads((organism_audit / "report.json").read_text(encoding="utf-8"))
    golds = [e["gold"] for m in full["models"] for e in m["evidence"]]
    texts = [json.loads(line)["text"] for line in
             (organism_audit / "inputs" / "passages.jsonl").read_text("utf-8").splitlines()]
    sentences = [s.strip() for t in golds + texts for s in t.replace("\n", " ").split(".")
                 if len(s.split()) >= 6]
    assert sentences
    for suffix in ("html", "md", "json"):
        body = " ".join((organism_audit / f"report-redacted.{suffix}").read_text("utf-8").split())
        leaked = [s for s in sentences if " ".join(s.split()) in body]
        assert leaked == [], suffix
    page, errors = _open(browser, organism_audit / "report-redacted.html")
    visible = " ".join(page.inner_text("body").split())
    assert not [s for s in sentences if " ".join(s.split()) in visible]
    assert "sha256" in visible and errors == []
    page.close()


def test_a_script_tag_in_a_reply_is_text(browser: Any, tmp_path: Path) -> None:
    text = tmp_path / "text.jsonl"
    text.write_text("".join(json.dumps({"id": f"t{i}", "text": f"Once {SCRIPT} upon "
                                        + " ".join(f"w{j}" for j in range(30))}) + "\n"
                            for i in range(3)), encoding="utf-8")
    ctl = tmp_path / "ctl.jsonl"
    ctl.write_text("".join(json.dumps({"id": f"c{i}", "text": " ".join(
        f"v{i}x{j}" for j in range(30))}) + "\n" for i in range(9)), encoding="utf-8")
    folder = _audit(tmp_path, "--text", str(text), "--controls", str(ctl), "--model",
                    "scripted:echo", "--passage-words", "30", "--no-pearl", "--bootstrap",
                    "0", "--no-cache")
    findings = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    replies = [e["attempt"] for e in findings["models"][0]["evidence"]]
    assert any(SCRIPT in r for r in replies)  # the reply really holds the tag
    html = (folder / "report.html").read_text(encoding="utf-8")
    assert SCRIPT not in html and "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html
    page, errors = _open(browser, folder / "report.html")
    page.click("details.evidence > summary")
    assert page.evaluate("window.__pwned") is None
    assert SCRIPT in page.inner_text("details.evidence pre.attempt")
    assert errors == []
    page.close()


def _catalogue_inputs(tmp: Path) -> list[str]:
    """Three works (one in short words, which the scripted model's pseudo log-probabilities
    favour) and 60 controls: as tests/audit/test_catalogue.py."""
    import random

    rng = random.Random(3)

    def passage(lengths: tuple[int, int]) -> str:
        return " ".join("".join(rng.choice("abcdefghij") for _ in range(rng.randint(*lengths)))
                        for _ in range(30))

    args = []
    for name, lengths in {"short": (1, 2), "plain1": (4, 7), "plain2": (4, 7)}.items():
        (tmp / f"{name}.jsonl").write_text("".join(json.dumps({"id": i, "text": passage(
            lengths)}) + "\n" for i in range(4)), encoding="utf-8")
        args += ["--text", str(tmp / f"{name}.jsonl")]
    (tmp / "c.jsonl").write_text("".join(json.dumps({"id": i, "text": passage((4, 7))}) + "\n"
                                         for i in range(60)), encoding="utf-8")
    return [*args, "--controls", str(tmp / "c.jsonl"), "--n-controls", "0"]


def test_a_catalogue_verdict_in_chromium(browser: Any, tmp_path: Path) -> None:
    """The catalogue's table (each work's conformal and BH-adjusted p, the work found), the
    detectors' evidence kind in the verdict table, dataset inference; a work's name opens
    its first passage's evidence."""
    folder = _audit(tmp_path, *_catalogue_inputs(tmp_path), "--model", "scripted:echo",
                    "--passages", "0", "--passage-words", "30", "--recap-passages", "0",
                    "--no-pearl", "--fdr-q", "0.2", "--bootstrap", "0", "--no-cache")
    page, errors = _open(browser, folder / "report.html")
    cells = page.eval_on_selector_all("#verdict-table tr.verdict-row td",
                                      "tds => tds.map(t => t.innerText)")
    assert cells[2].startswith("detectors against controls"), cells
    rows = page.eval_on_selector_all("#catalogue table tr", """trs => trs.slice(1).map(tr =>
        Array.from(tr.cells).map(c => c.innerText))""")
    assert [r[0] for r in rows if r[5] == "found"] == ["short"]
    assert page.is_visible("#dataset_inference")
    assert page.is_visible("#blind_baseline")  # the blind baseline: quiet on these sets
    assert "the detectors count in the verdict" in page.inner_text("#blind_baseline")
    assert cells[-1].startswith("0.") and "separates" not in cells[-1], cells
    sel = 'details.evidence[data-id="short:0"]'
    assert page.eval_on_selector(sel, "d => d.open") is False
    page.click("#catalogue table a >> text=short")
    page.wait_for_function("document.querySelector('details.evidence[data-id=\"short:0\"]')"
                           ".open === true")
    assert errors == []
    page.close()


def test_a_whole_book_reproduced_beyond_chance_in_chromium(browser: Any, tmp_path: Path
                                                          ) -> None:
    """A book of 3 chapters audited without controls: the scripted model echoes each
    prefix, and in every chapter all passages but its first are a 10-word run said twice,
    so they are reproduced verbatim (each chapter is 20-word passages: its heading and 18
    words, then two runs); the scripted reference model makes each span
    improbable by chance. The verdict rests on reproduction; the whole-book section gives
    the share, 6 of 9 passages (equal weights)."""
    words = [f"w{i}x{j}" for i in range(9) for j in range(10)]
    parts: list[str] = []
    k = 0
    for ch in range(1, 4):
        blocks = [" ".join(f"f{ch}y{j}" for j in range(18))]
        for _ in range(2):
            half = " ".join(words[k * 10:(k + 1) * 10])
            blocks.append(f"{half} {half}")
            k += 1
        parts.append(f"CHAPTER {ch}\n\n" + "\n".join(blocks))
    book = tmp_path / "book.txt"
    book.write_text("\n\n".join(parts) + "\n", encoding="utf-8")
    folder = _audit(tmp_path, "--text", str(book), "--model", "scripted:echo",
                    "--passages", "0", "--passage-words", "20", "--recap-passages", "0",
                    "--no-pearl", "--null-model", "scripted:reference", "--no-cache")
    findings = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    whole = findings["sections"]["whole_book"]
    (m,) = whole["models"].values()
    assert (m["verbatim"]["positives"], m["verbatim"]["n"]) == (6, 9)
    page, errors = _open(browser, folder / "report.html")
    cells = page.eval_on_selector_all("#verdict-table tr.verdict-row td",
                                      "tds => tds.map(t => t.innerText)")
    assert cells[1].startswith("memorized") and cells[2].startswith("reproduction"), cells
    text = page.inner_text("#whole_book")
    assert "66.7% of the book (6 of 9 sampled passages)" in text
    assert "reproduced beyond chance" in text
    assert errors == []
    page.close()


def _memorized_book(tmp: Path) -> tuple[Path, list[str]]:
    """Two chapters of made-up words, a full stop every 10 words; the words the measure
    reads (headings are not part of the text)."""
    import random

    rng = random.Random(11)
    body: list[list[str]] = [[f"{rng.choice('bdfgklmnprst')}{rng.choice('aeiou')}"
                              f"{rng.choice('lmnrst')}{i}" for i in range(n)] for n in (300, 260)]
    for ch in body:
        for j in range(9, len(ch), 10):
            ch[j] += "."
    book = tmp / "book.txt"
    book.write_text("\n\n".join(f"CHAPTER {k}\n\n{' '.join(ch)}" for k, ch in
                                enumerate(body, 1)) + "\n", encoding="utf-8")
    return book, [w for ch in body for w in ch]


def test_how_much_of_the_book_came_out_in_chromium(browser: Any, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A scripted model that holds the whole book continues it from the opening (the first
    chapter's heading and first sentence, 10 words): 550 of the 560 words come out, all of
    chapter II. The section gives the share, the map (one bar per block, the chapters
    named), the longest passages (withheld when redacted), the calls, and what the number
    does not mean."""
    from recitation.models.scripted import ScriptedModel

    book, words = _memorized_book(tmp_path)
    raw = book.read_text(encoding="utf-8").split()

    def reply(req: Any) -> str:
        tail = (req.prompt or "").split()[-6:]
        for i in range(len(raw) - len(tail) + 1):
            if raw[i:i + len(tail)] == tail:
                return " " + " ".join(raw[i + len(tail):i + len(tail) + 60])
        return ""

    monkeypatch.setattr("recitation.models.registry.build_backend",
                        lambda cfg: ScriptedModel(reply))
    folder = _audit(tmp_path, "--text", str(book), "--model", "scripted:memory",
                    "--whole-book", "--passages", "1", "--recap-passages", "0",
                    "--no-pearl", "--no-cache", "--null-model", "none")
    findings = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    (m,) = findings["sections"]["book_extraction"]["models"].values()
    assert (m["covered_words"], m["book_words"]) == (550, len(words)) == (550, 560)
    assert [c["covered"] for c in m["chapters"]] == [290, 260]
    md = (folder / "report.md").read_text(encoding="utf-8")
    assert "| CHAPTER 2 | 260 | 260 | 100.0% |" in md
    page, errors = _open(browser, folder / "report.html")
    text = page.inner_text("#book_extraction")
    assert "98.2% of the book extracted near-verbatim (550 of 560 words" in text
    assert "What this number does not mean" in text and words[100] in text
    page.wait_for_selector("#book-map-0 .main-svg")
    bars = page.evaluate("document.getElementById('book-map-0').data.length")
    assert bars == len(m["blocks"]) >= 1
    assert "CHAPTER 2" in page.inner_text("#book-map-0")
    assert errors == []
    page.close()
    redacted = folder / "redacted"
    assert main(["report", str(folder), "--redact", "--out", str(redacted)]) == 0
    html = next(redacted.glob("*.html")).read_text(encoding="utf-8")
    assert words[100] not in html and "[redacted:" in html
