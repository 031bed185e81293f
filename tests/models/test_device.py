"""Where a local model runs: the device grammar (config, spec suffix, ``--device``), the
identity that carries device and dtype, ``auto`` on a machine without CUDA, and the clear
error where CUDA is asked for and absent. No GPU is needed: the identity of a CUDA model is
computed without loading it."""

from __future__ import annotations

import argparse

import pytest
from pydantic import ValidationError

from recitation.errors import ConfigError
from recitation.models.config import (
    ModelConfig,
    apply_device,
    parse_model_spec,
    resolve_dtype,
    split_device,
    with_device,
)
from recitation.models.device import (
    check_available,
    check_device,
    cuda_available,
    device_key,
    is_device,
    resolve_device,
)
from recitation.models.local import LocalModel

LOCAL = {"concurrency": 1, "batch_size": 8}


@pytest.mark.parametrize(("spec", "expected"), [
    ("smollm2@cuda", {"backend": "local", "model": "smollm2", "device": "cuda", **LOCAL}),
    ("smollm2@cuda:3", {"backend": "local", "model": "smollm2", "device": "cuda:3", **LOCAL}),
    ("local:./m@cpu", {"backend": "local", "model": "./m", "device": "cpu", **LOCAL}),
    ("organism:quick:epoch2@auto",
     {"backend": "local", "model": "organism:quick:epoch2", "device": "auto", **LOCAL}),
    # a suffix not spelt as a device is part of a path
    ("local:/cache/org@rev/model", {"backend": "local", "model": "/cache/org@rev/model",
                                    **LOCAL}),
    ("/models/x@cuda:", {"backend": "local", "model": "/models/x@cuda:", **LOCAL}),
    ("/models/x@gpu", {"backend": "local", "model": "/models/x@gpu", **LOCAL}),
    # an API model's '@' is its endpoint, never a device
    ("openai:m@http://127.0.0.1:8000/v1",
     {"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:8000/v1"}),
])
def test_the_spec_names_a_local_device(spec: str, expected: dict[str, object]) -> None:
    cfg = parse_model_spec(spec)
    assert cfg == expected
    assert ModelConfig(**cfg).device == expected.get("device", "auto")


@pytest.mark.parametrize("text", ["auto", "cpu", "cuda", "cuda:0", "cuda:12"])
def test_device_forms(text: str) -> None:
    assert is_device(text) and check_device(text) == text


@pytest.mark.parametrize("text", ["gpu", "CUDA", "cuda:", "cuda:x", "cuda:1:2", "mps", ""])
def test_other_words_are_refused_with_the_forms(text: str) -> None:
    assert not is_device(text)
    with pytest.raises(ConfigError, match="auto, cpu, cuda, cuda:N"):
        check_device(text)
    with pytest.raises(ValidationError, match="auto, cpu, cuda, cuda:N"):
        ModelConfig(device=text)


def test_a_device_is_for_local_models_only() -> None:
    with pytest.raises(ValidationError, match="local backend only"):
        ModelConfig(backend="openai", model="m", device="cuda")
    with pytest.raises(ConfigError, match="drop --device"):
        with_device("openai:m@http://h/v1", "cuda")
    assert with_device("openai:m@http://h/v1", "auto") == "openai:m@http://h/v1"
    assert with_device("smollm2", "cuda:1") == "smollm2@cuda:1"
    assert with_device("smollm2@cpu", "cpu") == "smollm2@cpu"
    assert with_device("smollm2", None) == "smollm2"
    with pytest.raises(ConfigError, match="names device 'cpu' but --device says 'cuda'"):
        with_device("smollm2@cpu", "cuda")
    assert split_device("a@b@cuda") == ("a@b", "cuda")


def test_device_option_goes_into_every_local_spec_of_a_command() -> None:
    args = argparse.Namespace(device="cuda", model=["smollm2", "openai:m@http://h/v1"],
                              helper="openai:h", reference_model="./ref")
    apply_device(args)
    assert args.model == ["smollm2@cuda", "openai:m@http://h/v1"]
    assert args.helper == "openai:h" and args.reference_model == "./ref@cuda"
    empty = argparse.Namespace(device="cpu", model=[])  # audit's default model
    apply_device(empty)
    assert empty.model == ["smollm2@cpu"]
    with pytest.raises(ConfigError, match="is for local models"):
        apply_device(argparse.Namespace(device="cuda", model="openai:m"))
    with pytest.raises(ConfigError, match="auto, cpu, cuda, cuda:N"):
        apply_device(argparse.Namespace(device="gpu", model="smollm2"))
    untouched = argparse.Namespace(device=None, model="smollm2")
    apply_device(untouched)
    assert untouched.model == "smollm2"


def test_the_command_line_takes_device() -> None:
    from recitation.cli import build_parser

    parser = build_parser()
    for argv in (["detect", "--device", "cuda"], ["audit", "--text", "x", "--device", "cpu"],
                 ["probe", "name-cloze", "--novels", "x", "--device", "cuda:1"],
                 ["extract", "--book", "b", "--target", "smollm2", "--device", "cuda"],
                 ["propme", "--target", "smollm2", "--index", "i", "--device", "cpu"],
                 ["serve", "--device", "cpu"], ["organism", "build", "--device", "cuda"]):
        args = parser.parse_args(argv)
        assert args.device == argv[argv.index("--device") + 1]


def test_auto_is_the_cpu_without_cuda_and_dtype_follows_the_device() -> None:
    assert resolve_device("auto") == ("cuda:0" if cuda_available() else "cpu")
    assert resolve_device("cuda:2") == "cuda:2"  # taken as asked; checked at load
    assert resolve_dtype("auto", "cpu") == "float32"
    assert resolve_dtype("auto", "cuda:0") == "bfloat16"
    assert resolve_dtype("float32", "cuda") == "float32"
    assert device_key("cpu") == {} and device_key("cuda:1") == {"device": "cuda"}


def test_the_identity_says_which_device_and_dtype_answered() -> None:
    """The CPU in float32 keeps the identity every cache was written under; CUDA adds its
    kind (not its index) and, by default, bfloat16, so no answer is shared across them;
    the provenance (the run store) names both always. Nothing is loaded."""
    cpu = LocalModel("smollm2", device="cpu")
    assert cpu.identity() == {"backend": "local", "model": cpu.name}
    assert cpu.provenance()["device"] == "cpu" and cpu.provenance()["dtype"] == "float32"
    gpu = LocalModel("smollm2@cuda:1")
    assert gpu.device == "cuda:1" and gpu.dtype == "bfloat16"
    assert gpu.identity() == cpu.identity() | {"device": "cuda", "dtype": "bfloat16"}
    assert LocalModel("smollm2", device="cuda:0").identity() == gpu.identity()
    f32 = LocalModel("smollm2", device="cuda", dtype="float32")
    assert f32.identity() == cpu.identity() | {"device": "cuda"}
    assert gpu.answer_identity() != cpu.answer_identity()
    built = LocalModel.from_config(ModelConfig(**parse_model_spec("smollm2@cuda")))
    assert built.identity() == gpu.identity()


@pytest.mark.model
def test_cuda_where_torch_sees_none_is_a_clear_error() -> None:
    pytest.importorskip("torch")
    if cuda_available():
        pytest.skip("this machine has a CUDA device: the error is for machines without one")
    with pytest.raises(ConfigError, match="sees no CUDA device; use --device cpu"):
        check_available("cuda")
    with pytest.raises(ConfigError, match="sees no CUDA device"):
        LocalModel("smollm2@cuda").load()
    check_available("cpu")  # nothing to check
