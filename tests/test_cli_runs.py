"""CLI: run a YAML config, list and show runs, clear errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from recitation.cli import main


def write_config(tmp_path: Path, **over: object) -> Path:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": f"v{i}", "text": t}) for i, t in enumerate([
        "In the beginning God created the heaven and the earth",
        "And the earth was without form and void and darkness was upon the face of the deep",
    ])) + "\n")
    cfg = {"job": "prefix_probe", "model": {"backend": "scripted", "model": "echo"},
           "params": {"source": "jsonl", "path": str(corpus)}} | over
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_run_list_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs"
    assert main(["run", str(write_config(tmp_path)), "--runs-dir", str(runs)]) == 0
    out = capsys.readouterr().out
    assert "status: completed" in out and "items: 2/2" in out
    assert main(["runs", "list", "--runs-dir", str(runs), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert len(listed) == 1 and listed[0]["status"] == "completed" and listed[0]["items"] == "2/2"
    assert main(["runs", "show", listed[0]["run_id"], "--runs-dir", str(runs), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["meta"]["calls"]["calls"] == 2
    assert [r[0] for r in shown["table"]["rows"]] == ["v0", "v1"]
    assert main(["runs", "show", listed[0]["run_id"], "--runs-dir", str(runs)]) == 0
    assert "Prefix probing" in capsys.readouterr().out


def test_bad_inputs_give_named_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write_config(tmp_path, model={"backend": "scripted", "batch_size": -1})
    assert main(["run", str(bad), "--runs-dir", str(tmp_path / "r")]) == 1
    assert "model.batch_size" in capsys.readouterr().err
    missing = write_config(tmp_path, params={"source": "jsonl", "path": str(tmp_path / "x")})
    assert main(["run", str(missing), "--runs-dir", str(tmp_path / "r")]) == 1
    assert "JSONL file not found" in capsys.readouterr().err
    assert main(["resume", "no-such-run", "--runs-dir", str(tmp_path / "r")]) == 1
    assert "no run 'no-such-run'" in capsys.readouterr().err
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())


def test_errors_print_paths_whole_and_brackets_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An error names the file as given: not broken across lines (it must copy whole, at
    any terminal width) and square brackets not read as rich markup ("[bold]" vanished)."""
    path = tmp_path / ("d" * 150) / "[bold]x [MASK].yaml"
    assert main(["run", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"cannot read config {path}: " in err, err
    assert err.count("\n") == 1, err
