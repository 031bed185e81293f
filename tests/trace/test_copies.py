"""The default tracing finds every verbatim copy: a planted sentence copied with each kind of
trailing punctuation, across the line break its document has, at the start and at the end of
a generation and inside longer text, is traced to its document; an edited copy (every 12th
word swapped) yields the pieces between the edits. The reference is brute force over the
corpus text: the longest run of the generation's whole words that some document holds."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from recitation.cli import main
from recitation.corpus.kjv import kjv_verses
from recitation.trace.build import build_index
from recitation.trace.index import CorpusIndex, open_index
from recitation.trace.simpletrace import SimpleTrace, TraceConfig
from recitation.trace.sources import SourceDoc

PLANTED = ("The cartographer of Ystrad folded nine brass compasses into the tide ledger "
           "before dawn.")
AFTER = " lantern light lay on the quay, and the gulls were quiet."
WRAPPED = ("A second clerk of Ystrad counted the brass weights of the harbour\n"
           "scales twice before the bell rang for the morning tide.")
LONG = ("Along the outer wall of the customs house the fishermen of Ystrad hung their nets "
        "to dry, and the children who mended them sang the old counting song about seven "
        "herons and a grey boat, while the harbour master wrote the names of the ships in a "
        "ledger bound with green cord and kept it under the stair.")


def _corpus() -> list[str]:
    """300 documents: 297 of King James verses (public domain) and the three planted."""
    verses = list(kjv_verses().values())
    docs = [" ".join(verses[i * 20:(i + 1) * 20]) for i in range(297)]
    return [PLANTED + AFTER, "Of the harbour: " + WRAPPED, LONG, *docs]


@pytest.fixture(scope="module")
def tracer(tmp_path_factory: pytest.TempPathFactory) -> tuple[SimpleTrace, list[str]]:
    docs = _corpus()
    out = tmp_path_factory.mktemp("copies") / "idx"
    build_index([SourceDoc(t, {"n": i}) for i, t in enumerate(docs)], out)
    ix: CorpusIndex = open_index(out, engine="numpy")
    return SimpleTrace(ix, TraceConfig(rarity=1.0)), docs  # every span kept: all pieces


def brute_longest(docs: list[str], gen: str) -> str:
    """The longest piece of ``gen`` from a word start to a word end (no sentence end but
    its last character, a line break allowed) found in a document."""
    words = list(re.finditer(r"\w+", gen))
    best = ""
    for i, a in enumerate(words):
        for b in words[i:]:
            piece = gen[a.start():b.end()]
            if re.search(r"[.!?]", piece):
                break
            if not any(piece in d for d in docs):
                break
            end = b.end() + (1 if b.end() < len(gen) and gen[b.end()] in ".!?" else 0)
            whole = gen[a.start():end]
            piece = whole if any(whole in d for d in docs) else piece
            if len(piece) > len(best):
                best = piece
    return best


def _spans(st: SimpleTrace, gen: str) -> list[tuple[str, set[int]]]:
    t = st.trace(gen)
    raw = gen.encode("utf-8")
    return [(raw[s.start:s.end].decode("utf-8"), {d.metadata["metadata"]["n"] for d in s.docs})
            for s in t.spans]


BODY = PLANTED[0].lower() + PLANTED[1:-1]  # "the cartographer ... before dawn"
CASES = [
    *[f"He said that {BODY}{p} and left" for p in
      (".", ",", ";", ":", "!", "?", "...", " —", "'", '"', ")", "")],
    f"He said that {BODY}, and left.",
    PLANTED + " Then he slept.",  # at the start
    "Then the story went: " + PLANTED,  # at the end
    PLANTED,  # the whole generation
    PLANTED + AFTER,  # across the sentence end, as the document has it
    "It is written that " + PLANTED + " And nobody knew why the ledger was wet.",
    "Of the ledger: " + WRAPPED + " So it was.",  # the document's line break copied
    "Of the ledger: " + WRAPPED.replace("\n", " "),  # a space where the document breaks
]


@pytest.mark.parametrize("gen", CASES)
def test_a_copy_is_traced_to_its_document(tracer: tuple[SimpleTrace, list[str]],
                                          gen: str) -> None:
    st, docs = tracer
    want = brute_longest(docs, gen)
    holder = {i for i, d in enumerate(docs) if want in d}
    assert len(want.split()) >= 8, want  # the planted copy, not a common phrase
    found = _spans(st, gen)
    assert any(text == want and holder <= ids for text, ids in found), (want, found)


def test_an_edited_copy_yields_the_pieces_between_the_edits(
        tracer: tuple[SimpleTrace, list[str]]) -> None:
    st, docs = tracer
    words = LONG.split(" ")
    edited = " ".join("zebra" if (i + 1) % 12 == 0 else w for i, w in enumerate(words))
    pieces = [" ".join(words[k:k + 11]) for k in range(0, len(words), 12)]
    found = [text for text, ids in _spans(st, edited) if 2 in ids]
    for piece in pieces:
        if len(piece.split()) >= 3:  # each run between two edits, as the corpus has it
            cut = piece.rstrip(".,")
            assert any(cut in text or text in cut and len(text) >= len(cut) - 1
                       for text in found), (piece, found)
    assert all(t in LONG for t in found)


def test_the_issue_generations_trace_to_the_planted_document(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]
                                                             ) -> None:
    """The three generations of issue 47, through ``recitation trace`` with its defaults."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"text": d, "id": f"d{i}"}) + "\n"
                              for i, d in enumerate(_corpus())), encoding="utf-8")
    assert main(["index", "build", str(corpus), str(tmp_path / "idx")]) == 0
    gens = [f"He said that {BODY} and left", f"He said that {BODY}, and left.",
            PLANTED + AFTER.split()[0].join([" ", ""])]
    path = tmp_path / "gens.jsonl"
    path.write_text("".join(json.dumps({"id": f"g{i}", "text": g}) + "\n"
                            for i, g in enumerate(gens)), encoding="utf-8")
    capsys.readouterr()
    assert main(["trace", str(path), "--index", str(tmp_path / "idx"), "--runs-dir",
                 str(tmp_path / "runs"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["report"]["groups"]["all"]["definitions"] == "recitation"
    for g in out["generations"]:
        longest = max(g["spans"], key=lambda s: len(s["text"]))
        assert len(longest["text"].split()) >= 12, g
        assert "id d0" in {d["label"].split(",")[0] for d in longest["documents"]}, g
        assert g["nv_recall"] > 0.5, g
