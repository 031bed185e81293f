"""``recitation audit --whole-book``: a continue run per model on the audit's book, in the
stage after prefix probing, with the audit's limits; left out, with the reason, when the
text is no book; off unless asked for."""

from __future__ import annotations

import json
from pathlib import Path

from recitation.audit.run import AuditSettings, create_audit, run_stages
from recitation.runs.audits import load_manifest
from recitation.runs.runner import load_job
from recitation.runs.store import RunStore


def _book(path: Path) -> Path:
    path.write_text("\n\n".join(" ".join(f"p{i}w{j}" for j in range(60)) for i in range(8))
                    + "\n", encoding="utf-8")
    return path


def _settings(**kw: object) -> AuditSettings:
    return AuditSettings(passages=2, pearl=False, cache=False, recap_passages=0, **kw)


def test_whole_book_adds_a_continue_run_with_the_audits_limits(tmp_path: Path) -> None:
    book = _book(tmp_path / "book.txt")
    folder = create_audit([str(book)], ["scripted:echo"], [], _settings(
        whole_book=True, whole_book_calls=7, whole_book_tokens=33), runs_dir=tmp_path / "r")
    entry = load_manifest(folder)["models"][0]
    assert "continue" in entry["methods"] and "continue" in entry["runs"]
    assert run_stages(entry)[:2] == [["prefix_probe"], ["continue"]]
    with RunStore(folder / "runs" / entry["runs"]["continue"]) as store:
        cfg, job = load_job(store)
    assert cfg.job == "continue"
    assert (job.params.book, job.params.max_calls, job.params.max_new_tokens) == (
        str(book.resolve()), 7, 33)
    assert job.params.mode == "completion"  # as prefix probing: the backend takes raw text


def test_off_by_default_and_said_why(tmp_path: Path) -> None:
    folder = create_audit([str(_book(tmp_path / "book.txt"))], ["scripted:echo"], [],
                          _settings(), runs_dir=tmp_path / "r")
    entry = load_manifest(folder)["models"][0]
    assert "continue" not in entry["runs"]
    assert entry["skipped"]["continue"] == "turned off (--whole-book)"


def test_passages_are_no_book(tmp_path: Path) -> None:
    rows = tmp_path / "t.jsonl"
    rows.write_text("".join(json.dumps({"id": f"t{i}", "text": " ".join(
        f"t{i}w{j}" for j in range(120))}) + "\n" for i in range(3)), encoding="utf-8")
    folder = create_audit([str(rows)], ["scripted:echo"], [], _settings(whole_book=True),
                          runs_dir=tmp_path / "r")
    entry = load_manifest(folder)["models"][0]
    assert "continue" not in entry["runs"]
    assert entry["skipped"]["continue"].startswith("--whole-book needs a book as --text")
