"""Every default that changes what an audit reads is said: how the text was cut, which
passages and controls were kept (one line each, on stderr and in the manifest), and a text
too short for one passage names ``--passage-words``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recitation.audit.inputs import load_passages
from recitation.audit.run import AuditSettings, create_audit
from recitation.cli import main
from recitation.errors import CorpusError
from recitation.runs.audits import load_manifest


def _paragraphs(path: Path, n: int, words: int) -> Path:
    path.write_text("\n\n".join(" ".join(f"p{i}w{j}" for j in range(words))
                                for i in range(n)) + "\n", encoding="utf-8")
    return path


def _controls(path: Path, n: int, words: int = 40) -> Path:
    path.write_text("".join(json.dumps({"id": f"c{i}", "text": " ".join(
        f"c{i}w{j}" for j in range(words))}) + "\n" for i in range(n)), encoding="utf-8")
    return path


def test_a_book_recut_and_sampled_and_controls_kept_are_noticed(tmp_path: Path) -> None:
    """15 paragraphs of 40 words: re-cut into 6 passages of 100 words; 4 of them kept at
    random by chapter; 12 of 20 controls kept."""
    text = _paragraphs(tmp_path / "book.txt", 15, 40)
    ctl = _controls(tmp_path / "ctl.jsonl", 20, 120)
    settings = AuditSettings(passages=4, pearl=False, cache=False, recap_passages=0)
    folder = create_audit([str(text)], ["scripted:echo"], [str(ctl)], settings,
                          runs_dir=tmp_path / "runs")
    notes = load_manifest(folder)["notices"]
    assert notes == [
        f"text {text}: 15 paragraph(s) (600 words) re-cut into 6 passages of 100 words, "
        "across paragraph breaks (--passage-words N to change; now 100)",
        "text book: kept 4 of 6 passages, drawn at random by chapter with seed 0 "
        "(--passages N to change, 0: all; --seed for another draw)",
        f"controls {ctl}: 20 of 20 passages cut to their first 100 words (--passage-words "
        "N to change; now 100)",
        "controls: kept 12 of 20 control passages, evenly spaced (--n-controls N to change, "
        "0: all)"]


def test_nothing_changed_nothing_noticed(tmp_path: Path) -> None:
    """JSONL passages kept whole and all of them audited: no notice."""
    text, ctl = _controls(tmp_path / "t.jsonl", 3, 30), _controls(tmp_path / "c.jsonl", 6, 30)
    settings = AuditSettings(passage_words=30, pearl=False, cache=False, recap_passages=0)
    folder = create_audit([str(text)], ["scripted:echo"], [str(ctl)], settings,
                          runs_dir=tmp_path / "runs")
    assert load_manifest(folder)["notices"] == []


def test_the_leftover_words_of_a_book_are_counted(tmp_path: Path) -> None:
    text = _paragraphs(tmp_path / "b.txt", 5, 50)  # 250 words: 2 passages, 50 words left
    settings = AuditSettings(pearl=False, cache=False, recap_passages=0, null_model=None)
    folder = create_audit([str(text)], ["scripted:echo"], [], settings,
                          runs_dir=tmp_path / "runs")
    (note,) = load_manifest(folder)["notices"]
    assert "5 paragraph(s) (250 words) re-cut into 2 passages of 100 words" in note
    assert "the last 50 words of each book left out" in note


def test_a_text_shorter_than_one_passage_names_passage_words(tmp_path: Path) -> None:
    short = _paragraphs(tmp_path / "short.txt", 3, 12)  # 36 words
    with pytest.raises(CorpusError, match=r"has 36 words, fewer than one passage of 100 "
                       r"words \(--passage-words\): give --passage-words 36 or fewer"):
        load_passages(str(short), 100)
    assert len(load_passages(str(short), 36)) == 1
    tiny = _paragraphs(tmp_path / "tiny.txt", 1, 5)
    with pytest.raises(CorpusError, match="has 5 words; a passage needs at least 8"):
        load_passages(str(tiny), 100)


def test_the_command_prints_the_notices_on_stderr(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    text = _paragraphs(tmp_path / "book.txt", 15, 40)
    ctl = _controls(tmp_path / "ctl.jsonl", 20, 100)
    assert main(["audit", "--text", str(text), "--model", "scripted:echo", "--controls",
                 str(ctl), "--no-pearl", "--bootstrap", "0", "--recap-passages", "0",
                 "--no-cache", "--runs-dir", str(tmp_path / "runs")]) == 0
    err = capsys.readouterr().err
    notices = [line for line in err.splitlines() if line.startswith("notice: ")]
    assert len(notices) == 2, err  # the book re-cut; 12 of 20 controls kept
    assert "re-cut into 6 passages of 100 words" in notices[0]
    assert "kept 12 of 20 control passages" in notices[1]


def test_recap_on_a_few_passages_is_noticed(tmp_path: Path) -> None:
    text = _paragraphs(tmp_path / "book.txt", 15, 40)  # 6 passages
    ctl = _controls(tmp_path / "ctl.jsonl", 12, 100)
    settings = AuditSettings(pearl=False, cache=False, recap_passages=4)
    folder = create_audit([str(text)], ["scripted:echo"], [str(ctl)], settings,
                          runs_dir=tmp_path / "runs")
    assert load_manifest(folder)["notices"][-1] == (
        "RECAP: run on the first 4 of 6 text passages and the first 4 of 12 controls "
        "(--recap-passages N to change, 0: no RECAP)")


def test_the_reports_show_what_was_audited(tmp_path: Path) -> None:
    """The notices kept in the manifest are in report.json, report.md and report.html."""
    from recitation.report.write import write_reports

    text = _paragraphs(tmp_path / "book.txt", 15, 40)
    settings = AuditSettings(passages=4, pearl=False, cache=False, recap_passages=0,
                             null_model=None)
    folder = create_audit([str(text)], ["scripted:echo"], [], settings,
                          runs_dir=tmp_path / "runs")
    notes = load_manifest(folder)["notices"]
    assert notes
    paths = write_reports(folder)
    assert json.loads(paths["json"].read_text(encoding="utf-8"))["notices"] == notes
    md = paths["md"].read_text(encoding="utf-8")
    assert "## What was audited" in md and all(n.split(":")[0] in md for n in notes)
    assert 'id="notices"' in paths["html"].read_text(encoding="utf-8")
