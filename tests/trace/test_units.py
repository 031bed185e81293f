"""Word starts and word boundaries on a token-level index, with tokenizers of each family
built here with the ``tokenizers`` library (nothing downloaded) and wrapped as the index gets
a target's tokenizer (:class:`HFTokenizer` over ``PreTrainedTokenizerFast``):

- ``llama``: SentencePiece BPE as Llama-2's ``tokenizer.json`` has it (``▁`` for a space,
  digits split, byte fallback; the decoder strips the text's first space);
- ``unigram``: a SentencePiece Unigram with the ``Metaspace`` decoder;
- ``byte-level``: GPT-2/SmolLM2-style byte-level BPE (``Ġ`` for a space);
- ``wordpiece``: BERT-style (``##`` continues a word; the decoder puts the spaces back).

The expected word starts are computed from the text and the tokens' character offsets, never
from the decoder: a token starts a word when its first non-space character begins a run of
word characters."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from recitation.trace.build import build_index
from recitation.trace.index import open_index
from recitation.trace.simpletrace import TraceConfig, maximal_spans, units_of
from recitation.trace.sources import SourceDoc
from recitation.trace.units import is_word_char, token_texts, token_units

# public-domain text (KJV, Genesis 1:1-5), and one line of ours so that "é" is in every
# vocabulary (WordPiece would read "café" as one unknown token)
TRAIN = [
    "In the beginning God created the heaven and the earth.",
    "And the earth was without form, and void; and darkness was upon the face of the deep. "
    "And the Spirit of God moved upon the face of the waters.",
    "And God said, Let there be light: and there was light.",
    "And God saw the light, that it was good: and God divided the light from the darkness.",
    "And God called the light Day, and the darkness he called Night. And the evening and "
    "the morning were the first day. The café opened in 1611.",
]
SENTENCE = ("And God said, Let there be light in 1611 — and the café (the first) was "
            "upon the deep.")
FAMILIES = ["llama", "unigram", "byte-level", "wordpiece"]


def _llama(tk: Any, texts: list[str] = TRAIN, vocab_size: int = 300) -> Any:
    tok = tk.Tokenizer(tk.models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    tok.pre_tokenizer = tk.pre_tokenizers.Sequence([
        tk.pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first"),
        tk.pre_tokenizers.Digits(individual_digits=True)])
    tok.decoder = tk.decoders.Sequence([
        tk.decoders.Replace("▁", " "), tk.decoders.ByteFallback(), tk.decoders.Fuse(),
        tk.decoders.Strip(" ", 1, 0)])
    tok.train_from_iterator(texts, tk.trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<unk>", "<s>", "</s>"]))
    spec = json.loads(tok.to_str())  # the byte tokens, ordinary tokens as in Llama-2's vocab
    vocab = spec["model"]["vocab"]
    for b in range(256):
        vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    return tk.Tokenizer.from_str(json.dumps(spec))


def _unigram(tk: Any, texts: list[str] = TRAIN, vocab_size: int = 150) -> Any:
    tok = tk.Tokenizer(tk.models.Unigram())
    tok.pre_tokenizer = tk.pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = tk.decoders.Metaspace(replacement="▁", prepend_scheme="always")
    tok.train_from_iterator(texts, tk.trainers.UnigramTrainer(
        vocab_size=vocab_size, unk_token="<unk>", special_tokens=["<unk>"]))
    return tok


def _byte_level(tk: Any, texts: list[str] = TRAIN, vocab_size: int = 400) -> Any:
    tok = tk.Tokenizer(tk.models.BPE())
    tok.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tk.decoders.ByteLevel()
    tok.train_from_iterator(texts, tk.trainers.BpeTrainer(
        vocab_size=vocab_size, initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet()))
    return tok


def _wordpiece(tk: Any) -> Any:
    tok = tk.Tokenizer(tk.models.WordPiece(unk_token="[UNK]"))
    tok.pre_tokenizer = tk.pre_tokenizers.Whitespace()
    tok.decoder = tk.decoders.WordPiece()
    tok.train_from_iterator(TRAIN, tk.trainers.WordPieceTrainer(
        vocab_size=200, special_tokens=["[UNK]"]))
    return tok


BUILD = {"llama": _llama, "unigram": _unigram, "byte-level": _byte_level,
         "wordpiece": _wordpiece}


@pytest.fixture(scope="module", params=FAMILIES)
def family(request: pytest.FixtureRequest, require: Any) -> tuple[Any, Any]:
    """``(raw, wrapped)``: the ``tokenizers.Tokenizer`` and the index's view of it."""
    transformers = require.module("transformers", "pip install -e '.[local]'")
    tk = require.module("tokenizers", "pip install -e '.[local]'")
    from recitation.models.tokenizer import HFTokenizer

    raw = BUILD[request.param](tk)
    return raw, HFTokenizer(transformers.PreTrainedTokenizerFast(tokenizer_object=raw))


def expected(text: str, offsets: list[tuple[int, int]]) -> tuple[list[int], list[bool | None]]:
    """From the text alone: the tokens that begin a word (a run of word characters; of tokens
    with the same offsets the last, as ``Metaspace`` maps the ``▁`` it prepends onto the
    first character), and per position ``p`` whether a span may end before token ``p`` (the
    characters either side of its offset are not both word characters); ``None`` where a
    character is split over tokens (bytes: they read "�" and stay outside this check)."""
    starts: list[int] = []
    boundary: list[bool | None] = []
    for k, (s, e) in enumerate(offsets):
        a = s + len(text[s:e]) - len(text[s:e].lstrip())
        inserted = k + 1 < len(offsets) and offsets[k + 1] == (s, e)
        if a < e and is_word_char(text[a]) and (a == 0 or not is_word_char(text[a - 1])) \
                and not inserted:
            starts.append(k)
        split = any(o == (s, e) for j, o in enumerate(offsets) if j != k)
        prev_split = k > 0 and any(o == offsets[k - 1] for o in offsets[:k - 1])
        boundary.append(None if k == 0 or split or prev_split else
                        not (is_word_char(text[s - 1]) and is_word_char(text[s])))
    return starts, boundary


def test_word_starts_and_boundaries_from_the_text(family: tuple[Any, Any]) -> None:
    raw, tok = family
    enc = raw.encode(SENTENCE, add_special_tokens=False)
    ids = tok.encode(SENTENCE)
    assert ids == enc.ids
    u = token_units(ids, tok.decode)
    texts = token_texts(ids, tok.decode)
    starts, boundary = expected(SENTENCE, enc.offsets)
    assert len(starts) == len(re.findall(r"\w+", SENTENCE))  # each word's first token
    assert u.starts == starts, list(zip(enc.tokens, texts, strict=True))
    assert all(b is None or u.boundary[k] == b for k, b in enumerate(boundary))
    assert all(t.strip() == SENTENCE[s:e].strip() for t, (s, e), b in
               zip(texts, enc.offsets, boundary, strict=True) if t and b is not None)


WORDS = "the earth was without form and void darkness upon face of deep God said".split()


def word_spans(docs: list[str], gen: str) -> list[tuple[int, int]]:
    """Maximal spans in words, by scanning: from each word, the most words that occur as
    whole words in a document; spans not ending past the previous kept one dropped."""
    words, padded = gen.split(), [f"{d} " for d in docs]
    out: list[tuple[int, int]] = []
    for i in range(len(words)):
        e = i
        while e < len(words) and any(f" {' '.join(words[i:e + 1])} " in d for d in padded):
            e += 1
        if e > i and e > (out[-1][1] if out else 0):
            out.append((i, e))
    return out


def test_token_level_maximal_spans_equal_word_spans(family: tuple[Any, Any],
                                                     tmp_path: Path) -> None:
    """Text of whole words after single spaces (a space first too, so that a byte-level BPE
    reads every word with its ``Ġ``), each a word of the corpus and none a prefix of another:
    every family's tokens fall on word edges, so the token-level maximal spans are the maximal
    runs of words."""
    raw, tok = family
    rng = random.Random(5)
    docs = ["".join(" " + rng.choice(WORDS) for _ in range(40)) for _ in range(6)]
    build_index([SourceDoc(t, {"n": i}) for i, t in enumerate(docs)], tmp_path / "idx",
                tokenizer=tok, tokenizer_name="test")
    ix = open_index(tmp_path / "idx", engine="numpy", tokenizer=tok)
    for _ in range(10):
        gen = "".join(" " + rng.choice(WORDS) for _ in range(25))
        offsets = raw.encode(gen, add_special_tokens=False).offsets
        word_of = [len(gen[:s + len(gen[s:e]) - len(gen[s:e].lstrip())].split())
                   for s, e in offsets] + [len(gen.split())]
        found = maximal_spans(ix, units_of(ix, gen), TraceConfig(definitions="recitation"))
        assert [(word_of[a], word_of[b]) for a, b in found] == word_spans(docs, gen), gen
