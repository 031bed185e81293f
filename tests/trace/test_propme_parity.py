"""``--definitions propme`` equals the PROPME authors' computation, restated in our words from
their code (:mod:`propme_restated`, through the infini-gram package's own engine), on every
generation: segments, their documents, each document's tier and NVR, and the batch numbers
(ALS, FMR, NVR). Indexes are built here from two public-domain novels (*Emma*, *Persuasion*,
hard-wrapped as Gutenberg has them) with a SentencePiece-style tokenizer (Llama-2's layout)
and a byte-level BPE (GPT-2's), both trained here on the same text. Three generation sets,
as the review that found D1-D3 used: copies, edits and made-up text; "perfect reciter"
continuations (256 tokens after 50-token prefixes of the novels); the same with every 15th
word replaced."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest
from propme_restated import Restated, evaluate
from test_units import BUILD

from recitation.trace import infinigram
from recitation.trace.build import build_index
from recitation.trace.index import open_index
from recitation.trace.metrics import propme_aggregate
from recitation.trace.simpletrace import GenerationTrace, SimpleTrace, TraceConfig
from recitation.trace.sources import SourceDoc

pytestmark = pytest.mark.requires(infinigram.available, "infini-gram is not installed: "
                                  "pip install 'recitation[trace]'")
NOVELS = ("Emma", "Persuasion")
KJV = ["And God said, Let the waters under the heaven be gathered together unto one place.",
       "He maketh me to lie down in green pastures: he leadeth me beside the still waters.",
       "To every thing there is a season, and a time to every purpose under the heaven."]


def _corpus(data: Path) -> list[str]:
    """Documents of 150 lines each, as the files have them (line breaks kept)."""
    docs = []
    for name in NOVELS:
        lines = (data / "pdnc" / name / "novel_text.txt").read_text(
            encoding="utf-8").splitlines(keepends=True)
        docs += ["".join(lines[i:i + 150]) for i in range(0, len(lines), 150)]
    return [d for d in docs if d.strip()]


@pytest.fixture(scope="module", params=["llama", "unigram", "byte-level"])
def setup(request: pytest.FixtureRequest, shared_data: Path, require: Any,
          tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, list[str]]:
    transformers = require.module("transformers", "pip install -e '.[local]'")
    tk = require.module("tokenizers", "pip install -e '.[local]'")
    from recitation.models.tokenizer import HFTokenizer

    docs = _corpus(shared_data)
    raw = BUILD[request.param](tk, docs, 4000)
    tok = HFTokenizer(transformers.PreTrainedTokenizerFast(tokenizer_object=raw))
    out = tmp_path_factory.mktemp(request.param) / "idx"
    build_index([SourceDoc(t, {"n": i}) for i, t in enumerate(docs)], out, tokenizer=tok,
                tokenizer_name=request.param, max_shard_bytes=700_000)  # two shards or more
    return Restated(out, raw, docs), open_index(out, engine="numpy", tokenizer=tok), docs


def _mixed(docs: list[str], rng: random.Random) -> list[str]:
    """19 generations: copies of corpus sentences, alone, with trailing punctuation, inside
    longer text, across the line break the corpus has; edited copies; made-up text."""
    text = "".join(docs)
    sents = [s.strip() for s in re.findall(r"[A-Z][^.!?]{60,200}[.!?]", text)]
    wrapped = [s for s in sents if "\n" in s]
    one_line = [s.replace("\n", " ") for s in rng.sample(sents, 6)]
    out = [*one_line[:3], *rng.sample(wrapped, 3)]
    out += [one_line[3][:-1] + ", and left.", one_line[4][:-1] + " and left",
            "He said that " + one_line[5][0].lower() + one_line[5][1:] + " Then he went."]
    for s in rng.sample(sents, 4):
        w = s.split()
        w[len(w) // 2] = "zebra"
        out.append(" ".join(w))
    out += KJV + [KJV[0] + " " + one_line[0], one_line[1] + "\n" + KJV[1],
                  "The cartographer of Ystrad folded nine brass compasses."]
    return out


def _reciter(docs: list[str], raw: Any, rng: random.Random, n: int, every: int = 0
             ) -> list[str]:
    """``n`` continuations: the 256 tokens after a 50-token prefix of a random document,
    stripped (their generation script strips completions); ``every``: every such word
    replaced."""
    out = []
    long_docs = [d for d in docs if len(raw.encode(d, add_special_tokens=False).ids) > 400]
    for d in rng.sample(long_docs, n):
        ids = raw.encode(d, add_special_tokens=False).ids
        p = rng.randrange(0, len(ids) - 310)
        gen = raw.decode(ids[p + 50:p + 306]).strip()
        if every:
            w = gen.split(" ")
            gen = " ".join("zebra" if (i + 1) % every == 0 else x for i, x in enumerate(w))
        out.append(gen)
    return out


def _ours(t: GenerationTrace) -> list[tuple[int, int, list[tuple[int, bool, float]]]]:
    return [(a, b, [(d.doc_ix, d.tier == "exact_full_raw", float(d.nv or 0.0)) for d in seg])
            for (a, b), seg in zip(t.segments, t.segment_docs, strict=True)]


def _check_set(setup: tuple[Any, Any, list[str]], gens: list[str]) -> dict[str, float]:
    theirs, ix, _ = setup
    st = SimpleTrace(ix, TraceConfig(definitions="propme", seed=0))
    traces, ref = [], {}
    for g in gens:
        t = st.trace(g)
        segs = theirs.trace(g)
        want = [(s.start, s.end, [(d.doc_ix, d.full, d.nv) for d in s.docs]) for s in segs]
        assert _ours(t) == want, g
        traces.append(t)
        ref[g] = segs
    agg = propme_aggregate(traces)
    got = evaluate(ref)
    for key, value in got.items():
        assert agg[key] == value, key
    return got


def test_mixed_copies_edits_and_made_up_text(setup: tuple[Any, Any, list[str]]) -> None:
    theirs, _, docs = setup
    gens = _mixed(docs, random.Random(3))
    if theirs.raw.id_to_token(0) is not None and "▁" in "".join(
            theirs.raw.get_vocab()):  # SentencePiece: their literal ▁ test marks the first
        assert all(theirs.tokens(theirs.raw.encode(g, add_special_tokens=False).ids)[0]
                   .startswith("▁") for g in gens)
    got = _check_set(setup, gens)
    assert got["total_docs"] > 20 and got["full_match_ratio"] > 0  # the copies are found


@pytest.mark.slow
def test_perfect_reciter_and_its_edits(setup: tuple[Any, Any, list[str]]) -> None:
    theirs, _, docs = setup
    rng = random.Random(7)
    got = _check_set(setup, _reciter(docs, theirs.raw, rng, 6))
    print("RECITER", got)
    assert got["average_longest_span_length"] > 2
    edited = _check_set(setup, _reciter(docs, theirs.raw, rng, 6, every=15))
    assert edited["full_match_ratio"] == 0.0
