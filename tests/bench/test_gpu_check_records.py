"""The GPU check's kept H200 records (benchmarks/gpu_check/) and the doc's tables from them:
the doc is what ``benchmarks/gpu_check_doc.py`` writes; each run's FLOPs per token agree
with the 1B architecture's products counted on a transformers Llama built on the meta device
(an independent count of the weights multiplied per token); the shares and ratios follow
from the recorded rates; the goals' verdicts follow from the figures."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "benchmarks" / "gpu_check"


def _module(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _runs() -> list[dict[str, Any]]:
    index = json.loads((RECORDS / "index.json").read_text(encoding="utf-8"))
    return [json.loads((RECORDS / e["file"]).read_text(encoding="utf-8")) for e in index]


def test_the_doc_holds_the_tables_written_from_the_records() -> None:
    doc = _module("gpu_check_doc", ROOT / "benchmarks" / "gpu_check_doc.py")
    assert doc.main(["--check"]) == 0, "run: .venv/bin/python benchmarks/gpu_check_doc.py"


def _products_per_token(arch: dict[str, Any]) -> int:
    """Weights of every nn.Linear (projections and the tied output layer) of a transformers
    Llama with ``arch``'s shapes, built on the meta device (no memory)."""
    cfg = transformers.LlamaConfig(
        hidden_size=arch["hidden"], num_hidden_layers=arch["layers"],
        num_attention_heads=arch["heads"], num_key_value_heads=arch["kv_heads"],
        intermediate_size=arch["intermediate"], vocab_size=arch["vocab"],
        tie_word_embeddings=True)
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(cfg)
    return sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))


@pytest.mark.parametrize("run", range(3))
def test_flops_shares_and_ratios_follow_from_the_records(run: int) -> None:
    rec = _runs()[run]
    arch = rec["archs"]["llama-1b"]
    params = _products_per_token(arch)
    assert params == arch["matmul_params"]
    t = rec["throughput"]
    ours = t["ours"]
    per_token = ours["flops_per_s"] / ours["tokens_per_s"]
    longest = 1024  # the texts are about 512 tokens: attention adds at most this much
    attention = 2 * arch["layers"] * arch["hidden"] * (longest + 1)
    assert 2 * params <= per_token <= 2 * params + attention
    assert ours["tokens_per_s"] == pytest.approx(ours["tokens"] / ours["seconds"], rel=1e-9)
    assert ours["share_of_peak"] == pytest.approx(
        ours["flops_per_s"] / t["peak_bfloat16"]["flops_per_s"], rel=1e-9)
    assert t["ratio_to_naive"] == pytest.approx(
        ours["tokens_per_s"] / t["naive"]["tokens_per_s"], rel=1e-9)


def test_the_verdicts_follow_from_the_figures_and_goals() -> None:
    for rec in _runs():
        checks = {c["name"]: c for c in rec["checks"]}
        for key, res in rec["correctness"].items():
            worst = max(f["max_abs"] for f in res["float32"]["fields"].values())
            worst = max(worst, *res["float32"]["detectors"].values())
            assert worst == pytest.approx(res["float32"]["worst"])
            assert checks[f"correctness {key} float32"]["passed"] == (worst <= 1e-4)
        share = rec["throughput"]["ours"]["share_of_peak"]
        assert checks["throughput: share of the bfloat16 matmul peak"]["passed"] == (
            share >= 0.35)
    last = _runs()[-1]
    assert last["throughput"]["ours"]["share_of_peak"] >= 0.35
    assert all(c["passed"] for c in last["checks"] if c["fails_run"])
