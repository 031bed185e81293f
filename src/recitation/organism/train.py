"""Fine-tuning the base model on the members, deterministically, on the CPU or a GPU.

On a CUDA device the weights and the optimizer stay in float32 and the forward pass runs
under bfloat16 autocast (:func:`precision`); on the CPU, float32 throughout (every published
organism).

Full fine-tuning with AdamW at a constant learning rate (LoRA through ``peft`` as an
option). Determinism: ``torch.manual_seed``, ``torch.use_deterministic_algorithms``, a fixed
thread count and a data order that depends only on the seed and the epoch
(:func:`recitation.organism.data.training_order`), so the same config gives the same losses
and weights twice on one machine.
"""

from __future__ import annotations

import copy
import logging
import os
import warnings
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

from recitation.errors import require
from recitation.organism.data import Passage, training_order

log = logging.getLogger(__name__)

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
MAX_GRAD_NORM = 1.0


@contextmanager
def deterministic(seed: int, threads: int) -> Iterator[None]:
    """Seed torch, force deterministic kernels and ``threads`` threads; restore after."""
    import torch

    before = (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled())
    # cuBLAS is deterministic only with a fixed workspace (torch raises without one)
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.set_num_threads(before[0])
        torch.use_deterministic_algorithms(before[1])


def attach_lora(model: Any, rank: int) -> Any:
    """``model`` wrapped with LoRA adapters on every attention and MLP projection
    (:class:`~recitation.errors.MissingDependencyError` when ``peft`` is missing)."""
    peft = require("peft", "LoRA fine-tuning of the organism (--lora)")
    cfg = peft.LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=0.0,
                          target_modules=list(LORA_TARGETS), task_type="CAUSAL_LM")
    with warnings.catch_warnings():  # peft asks transformers 5 a deprecated question
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing",
                                category=FutureWarning)
        return peft.get_peft_model(model, cfg)


def encode_batch(tok: Any, texts: Sequence[str]) -> dict[str, Any]:
    """Right-padded ``input_ids``, ``attention_mask`` and ``labels`` (-100 on padding).

    Texts get the tokenizer's special tokens, as :meth:`LocalModel.score` encodes them."""
    import torch

    rows = [tok(t, add_special_tokens=True)["input_ids"] for t in texts]
    width = max(len(r) for r in rows)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    ids = torch.full((len(rows), width), int(pad), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
        mask[i, : len(r)] = 1
    labels = ids.masked_fill(mask == 0, -100)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def precision(device: Any) -> AbstractContextManager[Any]:
    """The forward pass's precision on ``device`` (a torch device): bfloat16 autocast on
    CUDA, nothing on the CPU."""
    import torch

    if device.type == "cuda":
        return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    return nullcontext()


def autocast_name(device: str) -> str | None:
    """What :func:`precision` autocasts to on ``device`` (a resolved name), for the
    manifest."""
    return "bfloat16" if device.startswith("cuda") else None


def train_epoch(model: Any, optimizer: Any, tok: Any, passages: Sequence[Passage], *,
                seed: int, epoch: int, batch_size: int) -> float:
    """One pass over the dosed members; returns the mean training loss per token."""
    import torch

    order = training_order(passages, seed, epoch)
    device = next(model.parameters()).device
    model.train()
    total, count = 0.0, 0
    for b in range(0, len(order), batch_size):
        batch = encode_batch(tok, [passages[i].text for i in order[b : b + batch_size]])
        batch = {k: v.to(device) for k, v in batch.items()}
        with precision(device):
            loss = model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_GRAD_NORM)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        n = int((batch["labels"][:, 1:] != -100).sum())
        total += float(loss.detach()) * n
        count += n
    model.eval()
    return total / count if count else float("nan")


def make_optimizer(model: Any, learning_rate: float) -> Any:
    """AdamW over the trainable parameters (all of them, or the LoRA adapters)."""
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    return torch.optim.AdamW(params, lr=learning_rate, weight_decay=0.0)


def save_checkpoint(model: Any, tok: Any, path: Path, *, lora: bool) -> None:
    """A transformers directory (weights + tokenizer) that ``LocalModel(path)`` loads; LoRA
    adapters are merged into a copy first."""
    out = copy.deepcopy(model).merge_and_unload() if lora else model
    out.save_pretrained(path)
    tok.save_pretrained(path)


def state_digest(model: Any) -> str:
    """SHA-256 over every parameter's bytes, in name order (to compare two trainings)."""
    import hashlib

    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().contiguous().cpu().numpy().tobytes())
    return h.hexdigest()
