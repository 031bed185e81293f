"""Whole-book extraction where the truth is known: the quick whole-work organism (SmolLM2
fine-tuned on the first two chapters of Pride and Prejudice, checkpoints at epochs 1, 4 and
16), through ``recitation bench book``, and ``recitation audit --whole-book`` through the
local backend and through the openai backend against ``recitation serve`` on 127.0.0.1.

The shares are recomputed here from each run's stored replies with the fixed-threshold
nv-recall of :mod:`recitation.metrics.nvrecall` (the paper's one-generation definition),
not with the function the benchmark calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recitation.bench.book import BookBenchConfig, equal_budget, measure, texts_of
from recitation.metrics.nvrecall import WHOLE_TEXT, nv_recall

pytestmark = [pytest.mark.slow, pytest.mark.model,
              # the first test builds the organism (16 epochs: 36-104 s each by the load
              # beside it) and runs 12 extractions: past 900 s on 2 cores shared with a
              # benchmark (seen 2026-11-28)
              pytest.mark.timeout(3600)]
THRESHOLD = 0.25  # measured at 12 calls x 192 tokens: 36.0% (docs/whole-book.md)


@pytest.fixture(scope="module")
def bench(book_quick: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("book-bench")
    cfg = BookBenchConfig(preset="book-quick", calls=8, reply_tokens=160,
                          methods=("continue", "prefix"))  # RECAP: docs/whole-book.md
    return measure(cfg, out, progress=lambda _: None) | {"out": str(out)}


def test_the_share_rises_with_dose_and_the_base_model_stays_near_zero(
        bench: dict[str, Any]) -> None:
    rows = {(r["epoch"], r["method"]): r for r in bench["rows"]}
    assert equal_budget(bench)
    for method in ("continue", "prefix"):
        assert rows[(0, method)]["nv_recall"] <= 0.02, method  # the base model
        shares = [rows[(e, method)]["nv_recall"] for e in (1, 4, 16)]
        assert shares[0] <= shares[1] <= shares[2], (method, shares)
    assert rows[(16, "continue")]["nv_recall"] >= THRESHOLD


def test_the_continue_share_is_the_papers_nv_recall_of_its_replies(
        bench: dict[str, Any]) -> None:
    from recitation.corpus.books import load_book

    out = Path(bench["out"])
    reference = "\n\n".join(c.full_text for c in load_book(out / "book.txt").chapters)
    runs = json.loads((out / "runs.json").read_text(encoding="utf-8"))
    for epoch in (0, 16):
        texts = texts_of("continue", out / "runs" / runs[f"continue-epoch{epoch}"])
        row = next(r for r in bench["rows"] if (r["epoch"], r["method"]) == (epoch,
                                                                            "continue"))
        assert nv_recall(reference, texts[0], WHOLE_TEXT).matched == row["covered_words"]


def test_kept_records_hold_the_texts_the_measure_read_and_the_build(
        bench: dict[str, Any], tmp_path: Path) -> None:
    import gzip

    from recitation.bench.book import keep

    out = Path(bench["out"])
    res_path, texts_path = keep(out, tmp_path, "book-quick")
    assert [p.name for p in (res_path, texts_path)] == ["book-quick.json",
                                                        "book-quick-texts.json.gz"]
    with gzip.open(texts_path, "rt", encoding="utf-8") as f:
        kept = json.load(f)
    assert kept["book"] == (out / "book.txt").read_text(encoding="utf-8")
    runs = json.loads((out / "runs.json").read_text(encoding="utf-8"))
    assert set(kept["texts"]) == set(runs)
    for key, folder in runs.items():
        assert kept["texts"][key] == texts_of(key.split("-")[0], out / "runs" / folder), key
    build = json.loads(res_path.read_text(encoding="utf-8"))["build"]
    assert build["seconds"] > 0 and build["dtype"] == "float32"
    assert set(build["losses"]) == {"0", "1", "4", "16"} and build["losses"]["0"] is None
    assert build["losses"]["1"] > build["losses"]["16"]  # trained: the loss fell


def test_bench_book_writes_its_presets_block_and_keeps_its_records(
        bench: dict[str, Any], tmp_path: Path, session_responses: Path) -> None:
    from recitation.bench.book import markdown
    from recitation.cli import main

    doc = tmp_path / "doc.md"
    doc.write_text("a\n<!-- bench-book-quick:start -->\nold\n<!-- bench-book-quick:end -->\n"
                   "<!-- bench-book:start -->\nfull\n<!-- bench-book:end -->\n", encoding="utf-8")
    # the fixture's settings: every call is answered from the response cache
    assert main(["bench", "book", "--preset", "book-quick", "--calls", "8", "--reply-tokens",
                 "160", "--methods", "continue", "prefix", "--out", str(tmp_path / "out"),
                 "--write-docs", str(doc), "--keep", str(tmp_path / "kept")]) == 0
    res = json.loads((tmp_path / "kept" / "book-quick.json").read_text(encoding="utf-8"))
    assert [r["covered_words"] for r in res["rows"]] == [
        r["covered_words"] for r in bench["rows"]]
    text = doc.read_text(encoding="utf-8")
    assert f"<!-- bench-book-quick:start -->\n{markdown(res)}\n" in text
    assert "<!-- bench-book:start -->\nfull\n" in text  # the full organism's block untouched
    assert (tmp_path / "kept" / "book-quick-texts.json.gz").exists()


def test_audit_whole_book_through_the_local_and_the_openai_backend(
        book_quick: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from recitation.cli import main
    from recitation.models.local import LocalModel
    from recitation.serve import start_server

    spec = "organism:book-quick:epoch16"
    book = tmp_path / "book.txt"
    from recitation.bench.book import work_book

    _, path = work_book(BookBenchConfig(preset="book-quick"), tmp_path / "w")
    book.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    common = ["--text", str(book), "--whole-book", "--whole-book-calls", "10",
              "--whole-book-tokens", "192", "--passages", "2", "--recap-passages", "0",
              "--no-pearl", "--yes", "--runs-dir", str(tmp_path / "runs")]
    shares = []
    with start_server(LocalModel(spec)) as server:
        for model, extra in ((spec, []), (f"openai:{spec}@{server.url}",
                                          # the server answers one request at a time, so
                                          # the audit's 8 concurrent ones queue: under load
                                          # the default (60 s + 1 s per 20 tokens) ran out
                                          # (CI 2026-11-29, 70.4 s); not a timing test
                                          ["--timeout", "1800"])):
            assert main(["audit", "--model", model, *common, *extra]) == 0
            out = capsys.readouterr().out
            line = next(x for x in out.splitlines() if "whole book (continue)" in x)
            shares.append(float(line.split("%")[0].rsplit(" ", 1)[-1]))
            report = max((tmp_path / "runs").glob("audit-*"), key=lambda p: p.stat().st_mtime)
            html = (report / "report.html").read_text(encoding="utf-8")
            assert 'id="book_extraction"' in html and "plotly" in html.lower()
    assert shares[0] >= 25 and abs(shares[0] - shares[1]) <= 5, shares
