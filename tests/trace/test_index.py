"""Corpus indexes: the files infini-gram writes, queries checked against brute force.

- a byte-level build is byte-identical to infini-gram's own indexer's (when installed);
- the suffix array is the byte-wise order of the suffixes (u8, u16, u32; token ids chosen so
  that numeric and little-endian byte order differ);
- count, find, longest prefix and document windows equal a brute-force scan of the documents,
  in the numpy engine and the infini-gram engine, one shard or many;
- tiny corpora, size validation, refusing to overwrite, reading an index with no manifest.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recitation.errors import ConfigError, CorpusError
from recitation.trace import infinigram
from recitation.trace.build import build_index, validate_index
from recitation.trace.formats import MANIFEST, ptr_size
from recitation.trace.index import open_index
from recitation.trace.sources import SourceDoc, iter_corpus

# checked when a test is set up: not installed skips (fails under CI), a broken install errors
NEEDS_IG = pytest.mark.requires(infinigram.available, "infini-gram is not installed: pip "
                                "install 'recitation[trace]' (bash scripts/test.sh installs it)")
ENGINES = ["numpy", pytest.param("infini-gram", marks=NEEDS_IG)]


class IdTokenizer:
    """Text of space-separated integers <-> those ids (any vocabulary size)."""

    def __init__(self, vocab_size: int) -> None:
        self.vocab_size = vocab_size

    def encode(self, text: str) -> list[int]:
        return [int(t) for t in text.split()]

    def decode(self, ids: list[int]) -> str:
        return " ".join(map(str, ids))

    def tokens(self, text: str) -> list[str]:
        return text.split()


def random_docs(rng: random.Random, n: int, alphabet: list[int], max_len: int = 40
                ) -> list[list[int]]:
    return [[rng.choice(alphabet) for _ in range(rng.randint(1, max_len))] for _ in range(n)]


def brute_count(docs: list[list[int]], q: list[int]) -> int:
    return sum(1 for d in docs for i in range(len(d) - len(q) + 1) if d[i:i + len(q)] == q)


def brute_longest(docs: list[list[int]], q: list[int]) -> int:
    best = 0
    for d in docs:
        for i in range(len(d)):
            k = 0
            while k < len(q) and i + k < len(d) and d[i + k] == q[k]:
                k += 1
            best = max(best, k)
    return best


# (width, alphabet): byte-level over a few letters; u16 and u32 with ids whose little-endian
# bytes sort differently from their values (256 > 1 numerically, b"\x00\x01" < b"\x01\x00")
CASES = {"u8": (None, [97, 98, 99, 32]),
         "u16": (IdTokenizer(4096), [1, 2, 256, 257, 513, 4000]),
         "u32": (IdTokenizer(70_000), [1, 256, 65_536, 65_537, 69_999])}


def _build(tmp: Path, case: str, docs: list[list[int]], **kw: object) -> Path:
    tok, _ = CASES[case]
    texts = [bytes(d).decode("ascii") if tok is None else " ".join(map(str, d)) for d in docs]
    out = tmp / f"idx-{case}-{kw.get('max_shard_bytes', 0)}"
    build_index((SourceDoc(t, {"i": i}, "mem", i) for i, t in enumerate(texts)), out,
                tokenizer=tok, tokenizer_name=case, **kw)  # type: ignore[arg-type]
    return out


def _within(doc: list[int], part: tuple[int, ...]) -> bool:
    return any(tuple(doc[i:i + len(part)]) == part for i in range(len(doc)))


@pytest.mark.parametrize("case", list(CASES))
def test_suffix_array_is_the_bytewise_order(case: str, tmp_path: Path) -> None:
    rng = random.Random(1)
    docs = random_docs(rng, 12, CASES[case][1])
    out = _build(tmp_path, case, docs)
    data = (out / "tokenized.0").read_bytes()
    width = {"u8": 1, "u16": 2, "u32": 4}[case]
    p = ptr_size(len(data))
    table = (out / "table.0").read_bytes()
    ptrs = [int.from_bytes(table[i:i + p], "little") for i in range(0, len(table), p)]
    assert ptrs == sorted(range(0, len(data), width), key=lambda o: data[o:])
    validate_index(out, width)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("shard_bytes", [None, 120])
def test_queries_equal_brute_force(case: str, engine: str, shard_bytes: int | None,
                                   tmp_path: Path) -> None:
    rng = random.Random(7)
    tok, alphabet = CASES[case]
    docs = random_docs(rng, 30, alphabet)
    out = _build(tmp_path, case, docs, max_shard_bytes=shard_bytes)
    ix = open_index(out, engine=engine, tokenizer=tok)  # type: ignore[arg-type]
    if shard_bytes:
        assert ix.engine.num_shards > 1
    e = ix.engine
    assert e.total_docs() == len(docs)
    assert e.total_tokens() == sum(len(d) + 1 for d in docs)
    for _ in range(60):
        d = rng.choice(docs)
        i = rng.randrange(len(d))
        q = d[i:i + rng.randint(1, 8)] + ([rng.choice(alphabet)] if rng.random() < 0.5 else [])
        assert e.count(q) == brute_count(docs, q), q
        assert e.longest_prefix(q) == brute_longest(docs, q), q
        r = e.find(q)
        for s, (lo, hi) in enumerate(r.segments):
            for rank in range(lo, hi):
                w = e.doc_by_rank(s, rank, len(q), 3)
                assert list(w.token_ids[w.needle_offset:w.needle_offset + len(q)]) == q
                # document numbers follow the engine's shard order; the metadata names it
                full = docs[json.loads(w.metadata)["metadata"]["i"]]
                assert w.doc_len == len(full)
                assert _within(full, w.token_ids)
                assert w.needle_offset <= 3 and len(w.token_ids) <= len(q) + 6
    for k in (0, len(docs) - 1):
        w = e.doc_by_ix(k, 10_000)
        assert list(w.token_ids) == docs[json.loads(w.metadata)["metadata"]["i"]]


def test_unigram_counts_are_the_corpus_counts(tmp_path: Path) -> None:
    docs = random_docs(random.Random(3), 10, CASES["u16"][1])
    ix = open_index(_build(tmp_path, "u16", docs), engine="numpy")
    want: dict[int, int] = {}
    for d in docs:
        for t in d:
            want[t] = want.get(t, 0) + 1
    assert ix.unigram_counts() == want


@NEEDS_IG
def test_byte_level_files_are_those_of_infinigrams_indexer(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    rng = random.Random(5)
    words = ["light", "darkness", "the", "earth", "and", "void", "café", "was", "God"]
    with (data / "a.jsonl").open("w") as f:
        for i in range(40):
            text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 30)))
            f.write(json.dumps({"text": text, "id": i, "src": "kjv-like"}) + "\n")
    theirs = tmp_path / "theirs"
    subprocess.run([sys.executable, "-m", "infini_gram.indexing", "--data_dir", str(data),
                    "--save_dir", str(theirs), "--token_dtype", "u8", "--cpus", "1",
                    "--mem", "1", "--ulimit", "1024", "--add_metadata", "--add_unigram"],
                   check=True, capture_output=True)
    ours = tmp_path / "ours"
    build_index(iter_corpus(data), ours)
    for name in ("tokenized", "table", "offset", "metadata", "metaoff", "unigram"):
        assert (ours / f"{name}.0").read_bytes() == (theirs / f"{name}.0").read_bytes(), name
    ix = open_index(theirs, engine="numpy")  # no manifest: the width is inferred
    assert ix.manifest is None and ix.token_width == 1
    assert ix.engine.count(ix.ids("the earth")) == open_index(ours).engine.count(
        ix.ids("the earth"))


@pytest.mark.parametrize("engine", ENGINES)
def test_parallel_shards_answer_as_one(engine: str, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from recitation.trace import build

    monkeypatch.setattr(build, "MIN_PARALLEL_SHARD", 100)
    rng = random.Random(4)
    docs = random_docs(rng, 40, CASES["u8"][1])
    one = _build(tmp_path, "u8", docs)
    many = tmp_path / "many"
    build_index([SourceDoc(bytes(d).decode(), {"i": i}) for i, d in enumerate(docs)], many,
                workers=3)
    e1, e3 = open_index(one, engine="numpy").engine, open_index(many, engine=engine).engine
    assert e3.num_shards == 3 and e3.total_docs() == len(docs)
    for _ in range(40):
        d = rng.choice(docs)
        q = d[:rng.randint(1, 6)]
        assert e3.count(q) == e1.count(q) == brute_count(docs, q)


@pytest.mark.parametrize("engine", ENGINES)
def test_tiny_corpus(engine: str, tmp_path: Path) -> None:
    out = tmp_path / "tiny"
    m = build_index([SourceDoc("a")], out)
    assert (m.tokens, m.documents) == (2, 1)
    assert (out / "table.0").stat().st_size == 2  # 2 tokens x 1-byte pointers
    e = open_index(out, engine=engine).engine
    assert (e.count([97]), e.count([98]), e.longest_prefix([97, 97])) == (1, 0, 1)


def test_size_validation_names_the_file(tmp_path: Path) -> None:
    out = tmp_path / "idx"
    build_index([SourceDoc("In the beginning"), SourceDoc("God created")], out)
    with (out / "table.0").open("ab") as f:
        f.write(b"\0")
    with pytest.raises(CorpusError, match=r"table\.0 has 30 bytes; expected 29 tokens"):
        validate_index(out, 1)


def test_refuses_to_overwrite_and_an_empty_corpus(tmp_path: Path) -> None:
    out = tmp_path / "idx"
    build_index([SourceDoc("x")], out)
    with pytest.raises(ConfigError, match="already holds an index"):
        build_index([SourceDoc("y")], out)
    build_index([SourceDoc("y")], out, overwrite=True)
    assert open_index(out).engine.count([ord("y")]) == 1
    with pytest.raises(CorpusError, match="no documents"):
        build_index([], tmp_path / "empty")


def test_token_width_inferred_without_manifest(tmp_path: Path) -> None:
    docs = random_docs(random.Random(2), 5, CASES["u16"][1])
    out = _build(tmp_path, "u16", docs)
    (out / MANIFEST).unlink()
    ix = open_index(out, engine="numpy")
    assert ix.token_width == 2 and ix.engine.count(docs[0][:2]) == brute_count(docs,
                                                                               docs[0][:2])


def test_sources_jsonl_text_and_errors(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "b.txt").write_text("CHAPTER I\n\n" + "word " * 40, encoding="utf-8")
    (tmp_path / "t" / "a.txt").write_text("alpha", encoding="utf-8")
    docs = list(iter_corpus(tmp_path / "t"))
    assert [d.path for d in docs] == ["a.txt", "b.txt"] and docs[0].text == "alpha"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\n{"txt": 1}\n', encoding="utf-8")
    with pytest.raises(CorpusError, match=r"bad.jsonl:2: expected a JSON object"):
        list(iter_corpus(bad))
    with pytest.raises(CorpusError, match="corpus not found"):
        list(iter_corpus(tmp_path / "nope"))
    kjv = iter_corpus("kjv")
    first = next(kjv)
    assert first.metadata == {"ref": "Genesis 1"} and first.text.startswith("In the beginning")


def test_pointer_sizes() -> None:
    assert [ptr_size(n) for n in (1, 2, 256, 257, 65_536, 65_537, 2**32 + 1)] == [
        1, 1, 1, 2, 2, 3, 5]
    arr = np.arange(5)
    assert arr.dtype == np.int64 and shutil.which("true")  # numpy default int is 64-bit here


def test_expected_size_cuts_shards_while_reading(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """With the corpus size known, the first shard is handed to a worker before the corpus is
    read to its end; the shards hold every document once and answer as one index."""
    from recitation.trace import build

    monkeypatch.setattr(build, "MIN_PARALLEL_SHARD", 100)
    rng = random.Random(5)
    docs = random_docs(rng, 60, CASES["u8"][1])
    total = sum(len(d) + 1 for d in docs)  # text and separators
    seen: list[int] = []

    def source() -> Any:
        for i, d in enumerate(docs):
            seen.append(i)
            yield SourceDoc(bytes(d).decode(), {"i": i})

    submitted: list[int] = []
    real_submit = build._ShardWriter.submit

    def spy(self: Any, shard: Any) -> None:
        submitted.append(len(seen))
        real_submit(self, shard)

    monkeypatch.setattr(build._ShardWriter, "submit", spy)
    many = tmp_path / "many"
    m = build_index(source(), many, workers=2, expected_bytes=total)
    assert m.shards == 2 and m.documents == len(docs)
    assert submitted[0] < len(docs)  # the first shard left before the last document was read
    one = _build(tmp_path, "u8", docs)
    e1, e2 = open_index(one, engine="numpy").engine, open_index(many, engine="numpy").engine
    for _ in range(40):
        q = rng.choice(docs)[:rng.randint(1, 6)]
        assert e2.count(q) == e1.count(q) == brute_count(docs, q)


def test_infinigram_not_installed_is_unavailable_but_a_broken_install_is_an_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, require: Any) -> None:
    """``available()`` is False only when the package is absent; an installed package whose
    engine fails to import (here: its module made unimportable, as a broken binary wheel)
    raises, so its tests error (fail under CI) instead of disappearing as skips."""
    from recitation.errors import MissingDependencyError, RecitationError
    from recitation.trace.infinigram import InfiniGramEngine

    out = _build(tmp_path, "u8", [[1, 2, 3]])
    with monkeypatch.context() as m:
        for mod in ("infini_gram", "infini_gram.engine"):
            m.setitem(sys.modules, mod, None)  # not installed
        assert infinigram.available() is False
        assert open_index(out).engine.count([1, 2]) == 1  # auto: the numpy engine
        with pytest.raises(MissingDependencyError, match="pip install 'recitation\\[trace\\]'"):
            InfiniGramEngine(out, 1)
    require(importlib.util.find_spec("infini_gram"), "infini-gram is not installed: pip "
            "install 'recitation[trace]' (the broken-install half needs it installed)")
    monkeypatch.setattr(importlib, "import_module", _broken_import(importlib.import_module))
    with pytest.raises(RecitationError, match="installed but its engine does not import "
                       r"\(OSError: libinfini.so: cannot open"):
        infinigram.available()
    with pytest.raises(RecitationError, match="does not import"):
        open_index(out)  # auto no longer falls back silently
    with pytest.raises(RecitationError, match="does not import"):
        InfiniGramEngine(out, 1)


def _broken_import(real: Any) -> Any:
    def fake(name: str, package: str | None = None) -> Any:
        if name.startswith("infini_gram"):
            raise OSError("libinfini.so: cannot open shared object file")
        return real(name, package)
    return fake
