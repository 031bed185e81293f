"""The commands: ``recitation index build|info|validate`` and ``recitation trace`` (a run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recitation.cli import main
from recitation.runs.runner import find_run, summarize_run

PSALM = ("The LORD is my shepherd; I shall not want. He maketh me to lie down in green "
         "pastures: he leadeth me beside the still waters. He restoreth my soul.")


def test_index_build_trace_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"text": PSALM, "id": "ps23"}) + "\n"
                      + json.dumps({"text": "In the beginning God created the heaven and the "
                                    "earth.", "id": "gen1"}) + "\n", encoding="utf-8")
    idx = tmp_path / "idx"
    assert main(["index", "build", str(corpus), str(idx)]) == 0
    assert "indexed 2 documents" in capsys.readouterr().out
    assert main(["index", "build", str(corpus), str(idx)]) == 1  # exists: refused
    assert "holds an index" in " ".join(capsys.readouterr().err.split())
    assert main(["index", "info", str(idx), "--engine", "numpy"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["documents"], info["manifest"]["token_dtype"]) == (2, "u8")
    for definitions in ("propme", "recitation"):
        assert main(["index", "validate", str(idx), "--docs", "2", "--json",
                     "--engine", "numpy", "--definitions", definitions]) == 0
        assert all(r["pass"] == 1.0 for r in json.loads(capsys.readouterr().out).values())

    gens = tmp_path / "gens.jsonl"
    gens.write_text(json.dumps({"id": "a", "group": "prefix", "text": PSALM[42:]}) + "\n"
                    + json.dumps({"id": "b", "group": "generic", "text": "A shepherd walked "
                                  "by the still waters of a new town."}) + "\n",
                    encoding="utf-8")
    runs = tmp_path / "runs"
    assert main(["trace", str(gens), "--index", str(idx), "--engine", "numpy",
                 "--runs-dir", str(runs)]) == 0
    run_dir = find_run(next(runs.iterdir()).name, runs)
    table, meta = summarize_run(run_dir)
    rows = {r[0]: r for r in table.rows}
    assert set(rows) == {"prefix", "generic", "all"}
    assert rows["prefix"][3] == "1.00" and rows["generic"][3] == "0.00"  # FMR
    # a run's stored generations traced again (here the trace run's own texts)
    assert main(["trace", "--from-run", run_dir.name, "--field", "text", "--index", str(idx),
                 "--engine", "numpy", "--runs-dir", str(runs)]) == 0
    exported = runs / "trace-inputs" / f"{run_dir.name}.jsonl"
    assert sorted(json.loads(x)["id"] for x in exported.read_text().splitlines()) == ["a", "b"]
    assert main(["trace", "--index", str(idx), "--runs-dir", str(runs)]) == 1


def test_trace_shows_where_each_span_came_from(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Per generation, each span's documents with their metadata: a table after the summary,
    and the whole of it with ``--json``."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"text": PSALM, "id": "ps23", "title": "Psalm 23"}) + "\n"
                      + json.dumps({"text": "Genesis says: In the beginning God created the "
                                    "heaven and the earth.", "id": "gen1"}) + "\n",
                      encoding="utf-8")
    idx = tmp_path / "idx"
    assert main(["index", "build", str(corpus), str(idx)]) == 0
    gens = tmp_path / "gens.jsonl"
    gens.write_text(json.dumps({"id": "copy", "text": PSALM[42:]}) + "\n"
                    + json.dumps({"id": "new", "text": "Quartz zebras jog."}) + "\n",
                    encoding="utf-8")
    capsys.readouterr()
    assert main(["trace", str(gens), "--index", str(idx), "--engine", "numpy", "--runs-dir",
                 str(tmp_path / "runs"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    by_id = {g["id"]: g for g in out["generations"]}
    assert set(by_id) == {"copy", "new"} and by_id["new"]["spans"] == []
    copy = by_id["copy"]
    assert copy["text"] == PSALM[42:] and copy["full_match"] is True
    docs = [d for s in copy["spans"] for d in s["documents"]]
    assert docs and {d["label"] for d in docs} == {"id ps23, corpus.jsonl line 1"}
    assert {(d["path"], tuple(d["lines"])) for d in docs} == {("corpus.jsonl", (1, 1))}
    assert docs[0]["metadata"]["metadata"]["title"] == "Psalm 23"
    assert docs[0]["tier"] == "exact_full_raw" and copy["nv_recall"] == 1.0
    assert out["report"]["groups"]["all"]["full_match_ratio"] == 0.5
    assert out["report"]["groups"]["all"]["definitions"] == "recitation"  # the default

    assert main(["trace", str(gens), "--index", str(idx), "--engine", "numpy", "--runs-dir",
                 str(tmp_path / "runs2")]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Where each span came from" in text
    assert "id ps23, corpus.jsonl line 1 (exact_full_raw)" in text
    assert "(no span)" in text
