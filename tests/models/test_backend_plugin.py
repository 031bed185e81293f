"""A made-up backend added as a plug-in: one module (in a temporary folder) and one line of
the backend registry (``recitation.models.config.BACKEND_CLASSES``), nothing else edited. Its
spec ``dict:FILE`` then works in ``detect`` and ``audit``; and an audit builds one backend
per distinct model spec, shared by all of that model's runs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from recitation.cli import main
from recitation.errors import ConfigError
from recitation.models import config
from recitation.runs.audits import load_manifest
from recitation.runs.store import RunStore

PLUGIN = '''
"""A local-like backend answering from a JSON dict (prompt -> reply) and scoring words: a word
the dict's "known" list holds is likely (log p -0.1), any other unlikely (log p -4)."""
import json
from pathlib import Path

from recitation.models.base import Capabilities, Generation, Model, TokenScores, Usage

BUILT = []


class DictModel(Model):
    backend = "dict"
    capabilities = Capabilities(logprobs=True, local=True)

    @classmethod
    def from_config(cls, cfg):
        BUILT.append(cfg.model)
        return cls(cfg.model)

    def __init__(self, path):
        self.name = Path(path).stem
        self.data = json.loads(Path(path).read_text(encoding="utf-8"))

    async def generate(self, requests):
        out = []
        for r in requests:
            text = r.prompt if r.prompt is not None else r.messages[-1].content
            reply = next((v for k, v in self.data["replies"].items() if k in text), "no idea")
            out.append(Generation(text=reply, usage=Usage(len(text.split()), 2),
                                  finish_reason="stop"))
        return out

    async def score(self, texts):
        known = set(self.data["known"])
        return [TokenScores(tokens=tuple(t.split()),
                            logprobs=tuple(-0.1 if w in known else -4.0 for w in t.split()[1:]),
                            usage=Usage(len(t.split()), 0)) for t in texts]
'''


@pytest.fixture
def dictplug(write_plugin: Callable[[str, str], None], monkeypatch: pytest.MonkeyPatch) -> Any:
    write_plugin("dictplug", PLUGIN)
    # the one registry line
    monkeypatch.setitem(config.BACKEND_CLASSES, "dict", "dictplug:DictModel")
    import dictplug  # type: ignore[import-not-found]

    dictplug.BUILT.clear()
    return dictplug


def _passages(path: Path, stem: str, n: int) -> Path:
    path.write_text("".join(json.dumps({"id": f"{stem}{i}", "text": " ".join(
        f"{stem}{i}w{j}" for j in range(30))}) + "\n" for i in range(n)), encoding="utf-8")
    return path


def _model_file(tmp_path: Path, name: str, text: Path) -> Path:
    """Knows every word of the text (a model that memorized it) and answers nothing."""
    words = [w for line in text.read_text("utf-8").splitlines()
             for w in json.loads(line)["text"].split()]
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"known": words, "replies": {}}), encoding="utf-8")
    return path


def test_a_made_up_backend_serves_detect_and_audit_through_its_spec(
        dictplug: Any, tmp_path: Path) -> None:
    text = _passages(tmp_path / "text.jsonl", "t", 6)
    ctl = _passages(tmp_path / "ctl.jsonl", "c", 12)
    knows = _model_file(tmp_path, "knows", text)
    spec = f"dict:{knows}"
    assert config.parse_model_spec(spec)["backend"] == "dict"
    assert "dict" in config.spec_help()

    runs = tmp_path / "runs"
    # two log-probabilities only (-0.1, -4): the integrity check fails them (a repeated
    # passage not predicted), so this made-up backend's are trusted by hand
    assert main(["detect", "--model", spec, "--members", str(text), "--controls", str(ctl),
                 "--detectors", "whitebox", "--runs-dir", str(runs), "--no-cache",
                 "--bootstrap", "0", "--trust-logprobs"]) == 0
    (run,) = runs.iterdir()
    with RunStore(run) as s:
        assert {c["backend"] for c in s.calls()} == {"dict"}
        loss = {r["sample"]["label"]: next(x["score"] for x in r["scores"]
                                           if x["detector"] == "loss")
                for _, r in s.results("detect")}
    assert loss == {"member": pytest.approx(0.1), "control": pytest.approx(4.0)}
    assert dictplug.BUILT == [str(knows)]  # built once: checked at creation, then run
    dictplug.BUILT.clear()

    blank = _model_file(tmp_path, "blank", ctl)  # knows the controls' words only
    audits = tmp_path / "audits"
    assert main(["audit", "--text", str(text), "--controls", str(ctl), "--model", spec,
                 "--model", f"dict:{blank}", "--passage-words", "30", "--no-pearl",
                 "--recap-passages", "1", "--runs-dir", str(audits), "--no-cache",
                 "--trust-logprobs"]) == 0
    (folder,) = audits.iterdir()
    entries = load_manifest(folder)["models"]
    assert [e["methods"] for e in entries] == [["prefix_probe", "recap", "whitebox",
                                                "recall"]] * 2
    # one backend per distinct spec for the whole audit: checked, then 4 runs each
    assert sorted(dictplug.BUILT) == sorted([str(knows), str(blank)])
    assert sum(len(e["runs"]) for e in entries) == 8
    findings = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    flagged = {m["spec"]: m["detection"]["detectors"]["min_k_20"]["flagged"]
               for m in findings["models"]}
    assert flagged == {spec: 6, f"dict:{blank}": 0}


def test_an_unknown_backend_is_refused_with_the_registered_ones(dictplug: Any) -> None:
    with pytest.raises(ValueError, match=r"unknown backend 'dikt' \(did you mean 'dict'"):
        config.ModelConfig(backend="dikt")
    with pytest.raises(ConfigError, match="unknown backend 'dikt'"):
        config.resolve_model_spec("x", backend="dikt")
    config.BACKEND_CLASSES["broken"] = "dictplug:BUILT"  # not a Model class
    from recitation.models.registry import backend_class

    try:
        with pytest.raises(ConfigError, match="'dictplug:BUILT' is not a Model class"):
            backend_class("broken")
    finally:
        del config.BACKEND_CLASSES["broken"]
