"""scripts/gpu_check.sh (issue 45, item 6): its CPU mode passes over only what a GPU machine
has, its figures are there and sane, and the parts a GPU run leans on are right.

Nothing here depends on timing: throughput figures are checked for presence and sign only.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "gpu_check.sh"


def _script_module(name: str) -> ModuleType:
    """``scripts/<name>.py`` imported by path (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GPU_CHECK_HOME": str(tmp_path / "home")}
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=REPO, env=env, text=True,
                          capture_output=True, timeout=540, check=False)


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("gpu-check")
    out = tmp / "check.json"
    done = _run(tmp, "--sandbox", "--device", "cpu", "--small", "--json", str(out))
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-6000:]
    assert "all checks passed" in done.stdout
    result: dict[str, Any] = json.loads(out.read_text())
    return result


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_cpu_small_mode_passes_over_what_a_gpu_machine_has(small_run: dict[str, Any]) -> None:
    r = small_run
    assert r["finished"] and r["mode"] == "small" and r["device"] == "cpu"
    assert r["environment"]["sandbox"] is True  # python -S over the GPU machine's packages
    assert "errors" not in r
    names = {c["name"]: c for c in r["checks"]}
    for name in ("correctness smollm2-135m float32", "correctness llama-1b float32",
                 "organism training", "generation batch"):
        assert names[name]["passed"] and names[name]["judged"], names[name]
    for goal in ("throughput: share of the bfloat16 matmul peak",
                 "throughput: ratio to the naive loop"):  # not judged on a CPU
        assert not names[goal]["judged"] and not names[goal]["fails_run"]


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_cpu_small_mode_figures_are_sane(small_run: dict[str, Any]) -> None:
    for key in ("smollm2-135m", "llama-1b"):
        res = small_run["correctness"][key]
        f32, bf16 = res["float32"], res["bfloat16"]
        assert f32["same_tokens"] and bf16["same_tokens"] and f32["tokens"] > 50
        assert set(f32["fields"]) == {"logprobs", "mean_logprob", "std_logprob",
                                      "top_logprob"}
        assert {"loss", "zlib", "min_k_20", "min_k_pp_20", "gap_k_20"} <= set(f32["detectors"])
        assert f32["worst"] <= 1e-4 < bf16["worst"]  # bfloat16 moves them; float32 does not
        # the random weights give distributions that are neither flat nor one-hot
        sig = res["reference_signals"]
        assert sig["mean_std_logprob"] > 1 and -5 < sig["mean_top_logprob"] < -0.1
    t = small_run["throughput"]
    for part in ("ours", "forward_only", "naive"):
        assert t[part]["tokens"] > 0 and t[part]["tokens_per_s"] > 0
    assert 0 < t["ours"]["share_of_peak"] and t["ratio_to_naive"] > 0
    assert t["peak_bfloat16"]["flops_per_s"] > 0 and t["peak_float32"]["flops_per_s"] > 0
    losses = small_run["training"]["losses"]
    assert all(math.isfinite(x) for x in losses) and losses[-1] < losses[0]
    gen = small_run["generation"]
    assert gen["rows"] == 4 and gen["tokens"] > 0 and gen["repeatable"]


def test_cuda_without_a_gpu_is_a_clear_error(tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device: the error cannot be shown")
    tok = tmp_path / "home" / "tokenizer"
    tok.mkdir(parents=True)
    (tok / "tokenizer.json").write_text("{}")  # found; never read before the device check
    done = _run(tmp_path, "--device", "cuda")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "sees no CUDA device" in done.stderr and "--device cpu --small" in done.stderr


def test_flops_count_every_product_of_the_model() -> None:
    """``Arch.matmul_params`` against the weights of the model transformers builds from the
    config (on the meta device: no memory): every Linear's, plus the tied output layer."""
    import torch
    import transformers

    gm = _script_module("gpu_check_models")
    for arch in gm.ARCHS.values():
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(gm.hf_config(arch))
        linear = sum(m.weight.numel() for m in model.modules()
                     if isinstance(m, torch.nn.Linear))
        assert model.lm_head.weight is model.model.embed_tokens.weight  # tied, counted once
        assert arch.matmul_params() == linear
    one_b = gm.ARCHS["llama-1b"]
    assert 1.23e9 < one_b.matmul_params() < 1.24e9  # Llama-3.2-1B: 1.24B with the embedding
    # attention: head_dim * L (L + 1) per head, layer and product pair, 2 FLOPs a product
    assert one_b.forward_flops([3]) == 2 * one_b.matmul_params() * 3 + 2 * 16 * 2048 * 12


def test_the_wheel_that_fits_this_python_is_picked(tmp_path: Path) -> None:
    from packaging.tags import sys_tags

    env = _script_module("gpu_check_env")
    tag = next(iter(sys_tags()))
    fits = f"pydantic_core-2.0-{tag.interpreter}-{tag.abi}-{tag.platform}.whl"
    for name in ("pydantic_core-2.0-cp399-cp399-manylinux_2_17_x86_64.whl", fits):
        (tmp_path / name).write_bytes(b"")
    assert env._fitting_wheel(tmp_path, "pydantic-core").name == fits
    with pytest.raises(FileNotFoundError):
        env._fitting_wheel(tmp_path, "pydantic")
