"""The transformers folder the local backend writes for the embedded GGUF model must load in
plain transformers and in vLLM: its config names the architecture, and the tied embedding
is stored as ``model.embed_tokens.weight`` (issue 30: stored only as ``lm_head.weight``,
vLLM loaded no embeddings and answered every token at log-probability -10.80)."""

from __future__ import annotations

import json

import pytest


@pytest.mark.model
@pytest.mark.slow
def test_the_converted_folder_is_a_standard_transformers_checkpoint() -> None:
    import torch
    import transformers
    from safetensors import safe_open

    from recitation.models.local import LocalModel, smollm2_gguf_path

    folder = LocalModel("smollm2")._ensure_converted()
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert config["architectures"] == ["LlamaForCausalLM"] and config["tie_word_embeddings"]
    with safe_open(str(folder / "model.safetensors"), "pt") as f:
        keys = set(f.keys())
    assert "model.embed_tokens.weight" in keys and "lm_head.weight" not in keys
    model, info = transformers.AutoModelForCausalLM.from_pretrained(
        folder, dtype=torch.float32, output_loading_info=True)
    assert not any(info.values()), info  # nothing missing, unexpected or mismatched
    # the reference: the GGUF file itself, through transformers' own GGUF reader
    gguf = smollm2_gguf_path()
    ref = transformers.AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    ids = tok("It is a truth universally acknowledged, that a single man", return_tensors="pt")
    with torch.inference_mode():
        a, b = model(**ids).logits, ref(**ids).logits
    assert torch.equal(model.lm_head.weight, model.model.embed_tokens.weight)
    assert float((a - b).abs().max()) < 1e-4
