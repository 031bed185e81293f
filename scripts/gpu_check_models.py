"""The GPU check's models and texts: random weights from configs written here, no download.

Two Llama-style architectures (:data:`ARCHS`): SmolLM2-135M's (the embedded model's, the
organism's base) and a 1B one with Llama-3.2-1B's shapes (128,256-token vocabulary, tied
embeddings); ``--small`` takes a two-layer, 64-wide version of each with the same vocabulary.
Every model uses the embedded SmolLM2 tokenizer (its ids stay under 49,152; the 1B model's
other rows are never read but its output layer and vocabulary statistics are computed over
all 128,256, as a real 1B model's are).

Weights: transformers' own initialisation (normal, std ``initializer_range``) under a fixed
seed, then the final RMSNorm's gain set to ``LOGIT_STD / (initializer_range * sqrt(hidden))``
so the logits have a standard deviation of about :data:`LOGIT_STD` (real models' are of that
order; at the initial 0.5 to 1 every distribution would be nearly flat and every signal
nearly constant). They are stored in bfloat16: float32 copies (upcast exactly) and bfloat16
copies hold the same numbers, so a bfloat16 run differs from a float32 one by its arithmetic
alone.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

LOGIT_STD = 2.0
SMOLLM2_VOCAB = 49152


@dataclass(frozen=True)
class Arch:
    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    rope_theta: float

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def matmul_params(self) -> int:
        """Weights multiplied per token: attention and MLP projections of every layer and
        the output layer (tied to the embedding, a real product); the input embedding is a
        look-up and norms are not products."""
        q = self.heads * self.head_dim
        kv = self.kv_heads * self.head_dim
        per_layer = self.hidden * q + 2 * self.hidden * kv + q * self.hidden
        per_layer += 3 * self.hidden * self.intermediate
        return self.layers * per_layer + self.hidden * self.vocab

    def forward_flops(self, lengths: list[int]) -> float:
        """FLOPs of one forward pass over texts of ``lengths`` tokens (padding not counted):
        ``2 * matmul_params * sum(L) + 2 * layers * heads * head_dim * sum(L * (L + 1))``, the
        second term causal attention (Q K^T and A V, each ``2 * head_dim`` a pair, over the
        ``L (L + 1) / 2`` pairs of a text)."""
        tokens = sum(lengths)
        pairs = sum(n * (n + 1) for n in lengths)
        q = self.heads * self.head_dim
        return 2.0 * self.matmul_params() * tokens + 2.0 * self.layers * q * pairs


ARCHS = {
    "smollm2-135m": Arch("smollm2-135m", 576, 30, 9, 3, 1536, SMOLLM2_VOCAB, 100000.0),
    "llama-1b": Arch("llama-1b", 2048, 16, 32, 8, 8192, 128256, 500000.0),
}
"""The full mode's architectures (SmolLM2-135M's config.json; Llama-3.2-1B's shapes)."""

SMALL = {
    "smollm2-135m": Arch("smollm2-135m-small", 64, 2, 4, 2, 128, SMOLLM2_VOCAB, 100000.0),
    "llama-1b": Arch("llama-1b-small", 64, 2, 4, 2, 256, SMOLLM2_VOCAB, 500000.0),
}
"""``--small``: two layers 64 wide, SmolLM2's vocabulary for both (a CPU's bfloat16 products
can be slow, and the output layer is most of a small model's work)."""


def hf_config(arch: Arch) -> Any:
    import transformers

    return transformers.LlamaConfig(
        vocab_size=arch.vocab, hidden_size=arch.hidden, num_hidden_layers=arch.layers,
        num_attention_heads=arch.heads, num_key_value_heads=arch.kv_heads,
        intermediate_size=arch.intermediate, head_dim=arch.head_dim,
        max_position_embeddings=8192, rms_norm_eps=1e-5, tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": arch.rope_theta},
        bos_token_id=1, eos_token_id=2, pad_token_id=2, initializer_range=0.02,
        architectures=["LlamaForCausalLM"])


def build_model(arch: Arch, tokenizer_dir: Path, dst: Path, *, seed: int,
                device: str = "cpu") -> Path:
    """A transformers folder at ``dst``: ``arch`` with random weights (module docstring),
    initialised on ``device`` under ``seed``, stored in bfloat16, with the tokenizer's files
    beside them. Returns ``dst``."""
    import torch
    import transformers

    cfg = hf_config(arch)
    torch.manual_seed(seed)
    auto: Any = transformers.AutoModelForCausalLM
    with torch.device(device):
        model = auto.from_config(cfg, dtype=torch.float32)
    gain = LOGIT_STD / (cfg.initializer_range * math.sqrt(arch.hidden))
    with torch.no_grad():
        model.model.norm.weight.fill_(gain)
    model = model.to(torch.bfloat16)
    dst.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(dst)
    for f in tokenizer_dir.iterdir():
        if f.is_file():
            shutil.copy2(f, dst / f.name)
    del model
    return dst


def sentences() -> list[str]:
    """The package's everyday sentences (plain English, written for the toolkit)."""
    text = (files("recitation") / "data" / "everyday_sentences.txt").read_text("utf-8")
    return [s.strip() for s in text.splitlines() if s.strip()]


def make_texts(tok: Any, n: int, lengths: list[int], seed: int) -> list[str]:
    """``n`` texts of sentences, text ``i`` at least ``lengths[i % len(lengths)]`` tokens
    long (whole sentences), starting with sentence ``i`` (no two neighbours share a
    16-token prefix, so none is scored through the shared-prefix path), the rest drawn under
    ``seed``."""
    import random

    pool = sentences()
    sizes = [len(tok(s, add_special_tokens=False)["input_ids"]) + 1 for s in pool]
    rng = random.Random(seed)
    texts = []
    for i in range(n):
        want, k = lengths[i % len(lengths)], i % len(pool)
        parts, got = [pool[k]], sizes[k]
        while got < want:
            k = rng.randrange(len(pool))
            parts.append(pool[k])
            got += sizes[k]
        texts.append(" ".join(parts))
    return texts


def spread_lengths(shortest: int, longest: int, n: int) -> list[int]:
    """``n`` target lengths from ``shortest`` to ``longest``, interleaved (long and short
    texts share every batch, so left padding is exercised)."""
    if n == 1:
        return [longest]
    steps = [shortest + (longest - shortest) * i // (n - 1) for i in range(n)]
    return [steps[(i * 7) % n] for i in range(n)] if n % 7 else steps
