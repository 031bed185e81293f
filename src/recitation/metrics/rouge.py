"""ROUGE-L (longest common subsequence) with the `rouge-score` package's exact semantics.

Tokenization replicates ``rouge_score.tokenize.tokenize`` (v0.1.2): lower-case, every run of
characters outside ``[a-z0-9]`` becomes a separator, and with ``use_stemmer=True`` tokens
longer than 3 characters go through NLTK's ``PorterStemmer()`` in its default
``NLTK_EXTENSIONS`` mode (the stemmer rouge-score instantiates). Scores follow
``rouge_scorer._score_lcs``: precision = LCS / len(candidate), recall = LCS / len(reference),
F1 = 2PR / (P + R); all three are 0 when either side has no tokens. Results therefore equal
``RougeScorer(['rougeL'], use_stemmer=...).score(reference, candidate)['rougeL']`` exactly;
they change only if NLTK changes its Porter stemmer.

The LCS is computed by ``rapidfuzz.distance.LCSseq`` (bit-parallel, C++) over token ids;
stems are cached per process.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from rapidfuzz.distance import LCSseq

_ALNUM_RUN = re.compile(r"[a-z0-9]+")
_VALID_TOKEN = re.compile(r"^[a-z0-9]+$")


@dataclass(frozen=True)
class RougeScore:
    """ROUGE-L precision, recall and F1 (``fmeasure``), as in ``rouge_score.scoring.Score``."""

    precision: float
    recall: float
    fmeasure: float


@lru_cache(maxsize=1)
def _porter() -> object:
    from nltk.stem.porter import PorterStemmer

    return PorterStemmer()


@lru_cache(maxsize=200_000)
def porter_stem(token: str) -> str:
    """NLTK's default Porter stem of ``token`` (cached)."""
    return str(_porter().stem(token))  # type: ignore[attr-defined]


@lru_cache(maxsize=200_000)
def _rouge_stem(token: str) -> str:
    """rouge-score's rule: stem tokens longer than 3 characters; "" if the result is not a
    valid token (never seen in practice: Porter stems of [a-z0-9]+ stay in [a-z0-9]+)."""
    stem = porter_stem(token) if len(token) > 3 else token
    return stem if _VALID_TOKEN.match(stem) else ""


def rouge_tokenize(text: str, *, use_stemmer: bool = False) -> list[str]:
    """The tokens ``rouge_score``'s default tokenizer produces for ``text``."""
    tokens: list[str] = _ALNUM_RUN.findall(text.lower())
    if use_stemmer:
        tokens = [t for t in map(_rouge_stem, tokens) if t]
    return tokens


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token sequences."""
    if not a or not b:
        return 0
    vocab: dict[str, int] = {}
    ids_a = [vocab.setdefault(t, len(vocab)) for t in a]
    ids_b = [vocab.get(t, -1) for t in b]
    return int(LCSseq.similarity(ids_a, ids_b))


def score_tokens(reference: Sequence[str], candidate: Sequence[str]) -> RougeScore:
    """ROUGE-L of already tokenized texts."""
    if not reference or not candidate:
        return RougeScore(0.0, 0.0, 0.0)
    lcs = lcs_length(reference, candidate)
    precision = lcs / len(candidate)
    recall = lcs / len(reference)
    if precision + recall > 0:
        fmeasure = 2 * precision * recall / (precision + recall)
    else:
        fmeasure = 0.0
    return RougeScore(precision, recall, fmeasure)


def rouge_l(reference: str, candidate: str, *, use_stemmer: bool = False) -> RougeScore:
    """ROUGE-L of ``candidate`` against ``reference`` (the rouge-score "target").

    Recall is the share of the reference's tokens recovered in order; it is what RECAP
    reports (with ``use_stemmer=True``).
    """
    return score_tokens(
        rouge_tokenize(reference, use_stemmer=use_stemmer),
        rouge_tokenize(candidate, use_stemmer=use_stemmer),
    )


def rouge_l_batch(
    references: Iterable[str], candidates: Iterable[str], *, use_stemmer: bool = False
) -> list[RougeScore]:
    """ROUGE-L for aligned pairs; repeated texts are tokenized once.

    Raises ``ValueError`` if the two iterables differ in length.
    """
    refs, cands = list(references), list(candidates)
    if len(refs) != len(cands):
        raise ValueError(f"{len(refs)} references but {len(cands)} candidates")
    cache: dict[str, list[str]] = {}

    def tok(text: str) -> list[str]:
        if text not in cache:
            cache[text] = rouge_tokenize(text, use_stemmer=use_stemmer)
        return cache[text]

    return [score_tokens(tok(r), tok(c)) for r, c in zip(refs, cands, strict=True)]
