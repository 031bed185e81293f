"""An audit from a YAML config (``recitation run audit.yaml``), the command line's settings
taken from AuditSettings, and an organism's passages as audit input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from recitation.audit import inputs
from recitation.audit.cli import settings_from
from recitation.audit.config import demo_config, parse_audit_config
from recitation.audit.run import AuditSettings
from recitation.cli import build_parser, main
from recitation.errors import ConfigError
from recitation.runs.audits import load_manifest


def _text(tmp_path: Path, stem: str, n: int) -> Path:
    p = tmp_path / f"{stem}.jsonl"
    p.write_text("".join(json.dumps({"id": f"{stem}{i}", "text": " ".join(
        f"{stem}{i}w{j}" for j in range(30))}) + "\n" for i in range(n)), encoding="utf-8")
    return p


def _yaml(tmp_path: Path, data: dict[str, object]) -> Path:
    path = tmp_path / "audit.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_an_audit_yaml_runs_as_the_command_does(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The same audit from ``recitation run audit.yaml`` and from ``recitation audit``: the
    same settings, models, inputs and verdicts in the two manifests and reports."""
    text, ctl = _text(tmp_path, "t", 3), _text(tmp_path, "c", 6)
    cfg = {"job": "audit", "name": "mine", "text": [str(text)], "models": ["scripted:echo"],
           "controls": [str(ctl)], "params": {"passage_words": 30, "pearl": False,
                                              "n_bootstrap": 0, "recap_passages": 1}}
    assert main(["run", str(_yaml(tmp_path, cfg)), "--runs-dir", str(tmp_path / "a"),
                 "--no-cache"]) == 0
    assert main(["audit", "--text", str(text), "--model", "scripted:echo", "--controls",
                 str(ctl), "--passage-words", "30", "--no-pearl", "--bootstrap", "0",
                 "--recap-passages", "1", "--no-cache", "--runs-dir",
                 str(tmp_path / "b")]) == 0
    (a,), (b,) = (list((tmp_path / d).iterdir()) for d in "ab")
    assert a.name.startswith("mine-") and b.name.startswith("audit-")
    ma, mb = load_manifest(a), load_manifest(b)
    assert ma["settings"] == mb["settings"] and ma["settings"]["cache"] is False
    for key in ("text", "controls", "input_hashes"):
        assert ma[key] == mb[key]
    assert [m["methods"] for m in ma["models"]] == [m["methods"] for m in mb["models"]]
    ra, rb = (json.loads((f / "report.json").read_text("utf-8")) for f in (a, b))
    assert [m["verdict"] for m in ra["models"]] == [m["verdict"] for m in rb["models"]]


@pytest.mark.parametrize(("change", "named"), [
    ({"params": {"pasages": 3}}, "params.pasages"),
    ({"modles": ["smollm2"]}, "modles"),
    ({"text": []}, "text"),
    ({"params": {"passages": -1}}, "params.passages"),
])
def test_a_bad_field_is_refused_by_name(tmp_path: Path, change: dict[str, object],
                                        named: str, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = {"job": "audit", "text": ["kjv:famous-long"]} | change
    assert main(["run", str(_yaml(tmp_path, cfg)), "--runs-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert named in err and "audit.yaml" in err
    assert not any(tmp_path.glob("audit-*"))  # nothing created


def test_command_line_defaults_are_the_settings_defaults(
        capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    plain = settings_from(parser.parse_args(["audit", "--text", "x"]))
    assert plain == AuditSettings()
    some = settings_from(parser.parse_args(["audit", "--text", "x", "--passages", "3",
                                            "--no-pearl", "--target-fpr", "0.05"]))
    assert some == AuditSettings(passages=3, pearl=False, target_fpr=0.05)
    with pytest.raises(SystemExit):
        parser.parse_args(["audit", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "text passages (0: all) (default: 12)" in shown
    assert "(default: 2 tokens per target word + 8)" in shown


def test_the_demo_is_a_config() -> None:
    cfg = demo_config()
    assert cfg.models == ["smollm2", "organism:quick:epoch2"]
    assert cfg.text == ["organism:quick:members"]
    assert cfg.controls == ["organism:quick:held-out"]
    assert inputs.given_controls_reason(cfg.controls) == inputs.ORGANISM_CONTROLS_REASON
    assert inputs.given_controls_reason(["book.txt"]).startswith("controls given")


@pytest.mark.parametrize("spec", ["organism:quick:everything", "organism:a:b:members",
                                  "organism:", "organism:bad name:members"])
def test_a_bad_organism_spec_is_refused(spec: str) -> None:
    with pytest.raises(ConfigError, match="organism"):
        inputs.load_passages(spec, 64)


def test_an_unbuilt_organism_says_how_to_build_it(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECITATION_MODEL_CACHE_DIR", str(tmp_path))
    with pytest.raises(ConfigError, match="recitation organism build"):
        inputs.load_passages("organism:members", 64)
    assert parse_audit_config({"job": "audit", "text": ["organism:members"]}).text == [
        "organism:members"]
