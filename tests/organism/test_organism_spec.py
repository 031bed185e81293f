"""``organism:epoch3`` / ``organism:quick:epoch2`` as a model spec on every command.

Model-free tests use a fake organism (a manifest and checkpoint folders holding only a
config.json: nothing is loaded); the last one audits the real quick organism with
``recitation demo``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recitation.errors import ConfigError
from recitation.models.config import ModelConfig, parse_model_spec
from recitation.models.local import LocalModel
from recitation.models.registry import build_backend
from recitation.organism.build import BuildResult
from recitation.runs.config import parse_config
from recitation.runs.runner import create_run
from recitation.runs.store import RunStore


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty model cache: ``organisms/`` under it holds what the test builds."""
    cache = tmp_path / "models"
    monkeypatch.setenv("RECITATION_MODEL_CACHE_DIR", str(cache))
    return cache / "organisms"


def fake_organism(root: Path, name: str, fingerprint: str, epochs: int = 2) -> Path:
    folder = root / name
    for e in range(epochs + 1):
        (folder / f"epoch{e}").mkdir(parents=True)
        (folder / f"epoch{e}" / "config.json").write_text("{}", encoding="utf-8")
    (folder / "manifest.json").write_text(json.dumps({
        "name": name, "fingerprint": fingerprint,
        "epochs": [{"epoch": e, "digest": f"{fingerprint[:8]}-weights-{e}"}
                   for e in range(epochs + 1)]}), encoding="utf-8")
    return folder


def test_spec_parses_as_a_local_model() -> None:
    for spec in ("organism:epoch3", "organism:quick:epoch2", "local:organism:quick:epoch2"):
        cfg = parse_model_spec(spec)
        assert cfg["backend"] == "local"
        assert cfg["model"] == spec.removeprefix("local:")
        ModelConfig.model_validate(cfg)


def test_spec_resolves_to_the_checkpoint(root: Path) -> None:
    quick = fake_organism(root, "quick", "a" * 64)
    fake_organism(root, "default", "b" * 64, epochs=3)
    m = LocalModel("organism:quick:epoch2")
    assert m.directory == quick / "epoch2" and m.gguf_file is None
    assert m.name == "organism:quick:epoch2"
    assert LocalModel("organism:epoch3").name == "organism:default:epoch3"
    assert isinstance(build_backend(ModelConfig.model_validate(
        parse_model_spec("organism:quick:epoch1"))), LocalModel)


def test_identity_differs_between_organisms_epochs_and_rebuilds(root: Path) -> None:
    fake_organism(root, "quick", "a" * 64)
    fake_organism(root, "default", "b" * 64)
    quick2 = LocalModel("organism:quick:epoch2").identity()
    assert quick2 == {"backend": "local", "model": "organism:quick:epoch2",
                      "fingerprint": "a" * 64, "weights": "aaaaaaaa-weights-2"}
    others = [LocalModel("organism:epoch2").identity(),  # the default organism's epoch2
              LocalModel("organism:quick:epoch1").identity()]
    assert quick2 not in others and others[0] != others[1]
    # the same checkpoint by its path: the same identity (one model, one cache entry)
    assert LocalModel(str(root / "quick" / "epoch2")).identity() == quick2
    # rebuilt with other inputs: same name and epoch, another identity
    fake_organism(root / "rebuilt", "quick", "c" * 64)
    (root / "quick" / "manifest.json").replace(root / "quick" / "old-manifest.json")
    (root / "rebuilt" / "quick" / "manifest.json").replace(root / "quick" / "manifest.json")
    rebuilt = LocalModel("organism:quick:epoch2").identity()
    assert rebuilt["model"] == quick2["model"] and rebuilt != quick2


def test_an_unbuilt_organism_says_how_to_build_it(root: Path) -> None:
    with pytest.raises(ConfigError) as e:
        LocalModel("organism:quick:epoch2")
    assert "model 'organism:quick:epoch2'" in str(e.value)
    assert "not built" in str(e.value) and "recitation organism build --quick" in str(e.value)
    with pytest.raises(ConfigError, match=r"recitation organism build'"):
        LocalModel("organism:epoch3")
    with pytest.raises(ConfigError, match=r"recitation organism build --name mine"):
        LocalModel("organism:mine:epoch1")


def test_bad_names_and_missing_epochs_are_explained(root: Path) -> None:
    fake_organism(root, "quick", "a" * 64)
    with pytest.raises(ConfigError, match=r"write epochN or NAME:epochN"):
        LocalModel("organism:quick:latest")
    with pytest.raises(ConfigError, match=r"has no epoch 5: it has epochs \[0, 1, 2\]"):
        LocalModel("organism:quick:epoch5")


@pytest.mark.parametrize("argv", [
    ["audit", "--text", "kjv:famous-long", "--model", "organism:quick:epoch2"],
    ["serve", "--model", "organism:quick:epoch2", "--port", "0"],
])
def test_commands_stop_before_any_model_call(root: Path, tmp_path: Path, argv: list[str],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    from recitation.cli import main

    runs = tmp_path / "runs"
    extra = ["--runs-dir", str(runs)] if argv[0] == "audit" else []
    assert main([*argv, *extra]) == 1
    assert "recitation organism build --quick" in capsys.readouterr().err
    assert not runs.exists()  # no run was created


def test_a_run_config_names_the_organism(root: Path, tmp_path: Path) -> None:
    """YAML ``model: {backend: local, model: organism:quick:epoch2}``: the run is created
    when the organism exists; an unbuilt reference model of a detect run is refused before
    the run exists."""
    fake_organism(root, "quick", "a" * 64)
    cfg = parse_config({"job": "prefix_probe", "model": {
        "backend": "local", "model": "organism:quick:epoch2"}}, source="test")
    with RunStore(create_run(cfg, tmp_path / "runs")) as store:
        assert store.get_meta("config")["model"]["model"] == "organism:quick:epoch2"
    members = tmp_path / "m.jsonl"
    members.write_text(json.dumps({"id": 0, "text": "In the beginning God created the "
                                   "heaven and the earth."}) + "\n", encoding="utf-8")
    detect = parse_config({"job": "detect", "model": {"backend": "scripted"}, "params": {
        "members": [str(members)], "controls": [str(members)],
        "reference_model": {"backend": "local", "model": "organism:epoch1"}}}, source="test")
    with pytest.raises(ConfigError, match=r"organism 'default' is not built"):
        create_run(detect, tmp_path / "runs2")
    assert not (tmp_path / "runs2").exists()


@pytest.mark.model
@pytest.mark.slow
def test_audit_of_the_quick_organism_is_cached_per_checkpoint(quick: BuildResult,
                                                               tmp_path: Path) -> None:
    """``recitation audit --model organism:quick:epoch2`` (what the demo runs): it runs, a
    second run is answered from the response cache, and epoch 1 (same name, other weights)
    is not."""
    from recitation.cli import main

    text = tmp_path / "t.jsonl"
    text.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate((
        "In the beginning God created the heaven and the earth. And the earth was without "
        "form, and void", "And God said, Let there be light: and there was light. And God "
        "saw the light, that it was good"))), encoding="utf-8")

    def demo(spec: str) -> dict[str, object]:
        runs = tmp_path / spec.replace(":", "-")
        before = set(runs.iterdir()) if runs.exists() else set()
        assert main(["audit", "--text", str(text), "--model", spec, "--runs-dir", str(runs),
                     "--no-pearl", "--max-new-tokens", "16", "--recap-passages", "0",
                     "--null-model", "none"]) == 0
        (audit,) = set(runs.iterdir()) - before
        (run,) = (audit / "runs").iterdir()  # no controls, no RECAP: prefix probing only
        with RunStore(run) as store:
            assert len(dict(store.results())) == 2
            return store.call_totals()

    first = demo("organism:quick:epoch2")
    assert (first["calls"], first["served_from_cache"]) == (2, 0)
    assert demo("organism:quick:epoch2")["served_from_cache"] == 2
    assert demo("organism:quick:epoch1")["served_from_cache"] == 0
