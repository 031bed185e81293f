"""One grammar names a model on every command: ``backend:model[@url]``; bare names and paths
are local. Parsed only by ``recitation.models.config.parse_model_spec``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recitation.errors import ConfigError
from recitation.models.config import (
    ModelConfig,
    backend_names,
    parse_model_spec,
    resolve_model_spec,
)
from recitation.runs.store import RunStore

LOCAL = {"concurrency": 1, "batch_size": 8}


@pytest.mark.parametrize(("spec", "expected"), [
    ("smollm2", {"backend": "local", "model": "smollm2", **LOCAL}),
    ("./models/my-model", {"backend": "local", "model": "./models/my-model", **LOCAL}),
    ("C:\\models\\x.gguf", {"backend": "local", "model": "C:\\models\\x.gguf", **LOCAL}),
    ("local:/cache/org@rev/model", {"backend": "local", "model": "/cache/org@rev/model",
                                    **LOCAL}),
    ("openai:gpt-4.1", {"backend": "openai", "model": "gpt-4.1"}),
    ("openai:llama3@http://localhost:8000/v1",
     {"backend": "openai", "model": "llama3", "base_url": "http://localhost:8000/v1"}),
    ("anthropic:claude-3-7-sonnet-latest",
     {"backend": "anthropic", "model": "claude-3-7-sonnet-latest"}),
    ("scripted:echo", {"backend": "scripted", "model": "echo"}),
])
def test_specs(spec: str, expected: dict[str, object]) -> None:
    cfg = parse_model_spec(spec)
    assert cfg == expected
    ModelConfig.model_validate(cfg)  # every parsed spec is a valid model config


@pytest.mark.parametrize("spec", ["openai:", "openai:@http://x", "openai:gpt@", ""])
def test_bad_specs_say_the_grammar(spec: str) -> None:
    with pytest.raises(ConfigError, match=r"backend:model\[@url\]"):
        parse_model_spec(spec)


def test_backend_names_live_in_one_place() -> None:
    from recitation.models.config import BACKENDS
    from recitation.models.registry import BACKEND_CLASSES

    assert backend_names() == tuple(BACKENDS.names())  # the built-in table, then plug-ins
    assert backend_names()[:len(BACKEND_CLASSES)] == tuple(BACKEND_CLASSES)
    from recitation.runs.config import parse_config

    with pytest.raises(ConfigError, match="model.backend"):
        parse_config({"job": "prefix_probe", "model": {"backend": "vllm"}})


def test_deprecated_aliases_mean_the_spec() -> None:
    assert (resolve_model_spec("gpt-4o-mini", backend="openai", base_url="http://h/v1")
            == parse_model_spec("openai:gpt-4o-mini@http://h/v1"))
    assert resolve_model_spec("openai:gpt-4o-mini", backend="openai") == parse_model_spec(
        "openai:gpt-4o-mini")
    with pytest.raises(ConfigError, match="names backend 'anthropic'"):
        resolve_model_spec("anthropic:claude", backend="openai")
    with pytest.raises(ConfigError, match="deprecated --base-url"):
        resolve_model_spec("openai:m@http://a/v1", base_url="http://b/v1")


def test_extract_uses_the_shared_parser() -> None:
    from recitation.extract import cli

    assert cli.parse_model_spec is parse_model_spec


def _detect_config(*argv: str) -> tuple[ModelConfig, dict[str, object]]:
    from recitation.cli import build_parser
    from recitation.detect.cli import build_config

    cfg = build_config(build_parser().parse_args(["detect", *argv]))
    return cfg.model, cfg.params


def test_detect_model_takes_the_spec(capsys: pytest.CaptureFixture[str]) -> None:
    model, params = _detect_config("--model", "openai:gpt-4.1@http://localhost:8000/v1",
                                   "--reference-model", "openai:gpt-4.1-mini")
    assert (model.backend, model.model, model.base_url) == (
        "openai", "gpt-4.1", "http://localhost:8000/v1")
    assert (model.batch_size, model.concurrency) == (8, 1)  # --batch-size, --concurrency
    assert params["reference_model"] == {"backend": "openai", "model": "gpt-4.1-mini"}
    assert "deprecated" not in capsys.readouterr().err
    default, params = _detect_config()
    assert (default.backend, default.model) == ("local", "smollm2")
    assert "reference_model" not in params


def test_detect_backend_and_base_url_still_work_but_warn(
        capsys: pytest.CaptureFixture[str]) -> None:
    old, old_params = _detect_config("--model", "gpt-4.1", "--backend", "openai",
                                     "--base-url", "http://h/v1", "--reference-model", "ref",
                                     "--reference-backend", "anthropic")
    err = capsys.readouterr().err
    assert "--model openai:gpt-4.1@http://h/v1" in err
    assert "--reference-model anthropic:ref" in err
    new, new_params = _detect_config("--model", "openai:gpt-4.1@http://h/v1",
                                     "--reference-model", "anthropic:ref")
    assert old == new and old_params == new_params
    with pytest.raises(ConfigError):
        _detect_config("--model", "anthropic:claude", "--backend", "openai")


def test_audit_model_takes_the_spec(tmp_path: Path) -> None:
    """``audit --model`` (and the demo's ``--model``, which makes an audit) take a spec."""
    from recitation.cli import main

    runs = tmp_path / "runs"
    text = tmp_path / "t.jsonl"
    text.write_text(json.dumps({"id": 1, "text": "In the beginning God created the heaven "
                                "and the earth. And the earth was without form"}) + "\n",
                    encoding="utf-8")
    assert main(["audit", "--text", str(text), "--model", "scripted:echo", "--runs-dir",
                 str(runs), "--no-cache", "--no-pearl", "--recap-passages", "0",
                 "--null-model", "none"]) == 0
    (audit,) = runs.iterdir()
    (run_dir,) = (audit / "runs").iterdir()  # no controls, no RECAP: prefix probing only
    with RunStore(run_dir) as store:
        model = store.get_meta("config")["model"]
    assert (model["backend"], model["model"]) == ("scripted", "echo")
    assert json.dumps(model)  # stored as plain JSON


def test_serve_model_takes_the_spec(capsys: pytest.CaptureFixture[str]) -> None:
    """``serve --model`` uses the same grammar; an API backend is refused by name, before any
    model is loaded or port bound."""
    from recitation.cli import main

    assert main(["serve", "--model", "openai:gpt-4.1@http://127.0.0.1:9/v1"]) == 1
    err = " ".join(capsys.readouterr().err.split())  # rich wraps long lines
    assert "only local models can be served" in err and "backend 'openai'" in err
    assert main(["serve", "--model", "anthropic:claude", "--backend", "local"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "deprecated backend option says 'local'" in err
