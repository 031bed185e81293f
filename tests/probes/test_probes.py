"""Name cloze, CSG and quotation attribution: the text transformations, checked by hand and
on real PDNC novels (name replacement, chunk coverage, exact alias mapping), and the jobs on
a scripted model."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from recitation.corpus.pdnc import PdncCharacter
from recitation.errors import ConfigError
from recitation.models.base import GenerationRequest
from recitation.models.scripted import ScriptedModel
from recitation.probes import csg, name_cloze
from recitation.probes import quote_attribution as qa
from recitation.probes.novel import (
    load_novel,
    names_of,
    novel_meta,
    occurs,
    parse_tag,
    sentence_spans,
    split_honorific,
)
from recitation.runs.jobs import make_job

TINY = Path(__file__).parent / "data" / "tiny_novel"
NEW_NAMES = {n for ns in (*csg.FIRST_NAMES.values(), *csg.MORE_FIRST_NAMES.values(),
                         csg.LAST_NAMES, csg.MORE_LAST_NAMES) for n in ns}
NOVELS = ["Persuasion", "Emma", "AlicesAdventuresInWonderland", "HardTimes"]


def run(job: Any, model: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = asyncio.run(job.run_items(job.items(), model))
    return out


# -- helpers ---------------------------------------------------------------------------------


def test_sentences_do_not_end_at_honorifics() -> None:
    text = 'Mr. Smith came. "Hello!" said Mrs. Jones. She left\n\nNew para.'
    got = [text[a:b] for a, b in sentence_spans(text)]
    assert got == ["Mr. Smith came.", '"Hello!" said Mrs. Jones.', "She left", "New para."]


def test_parse_tag_as_the_authors() -> None:
    assert parse_tag("<name>Anne</name>", "name") == "Anne"
    assert parse_tag("<speaker>[Wentworth]<\\speaker>", "speaker") == "Wentworth"
    assert parse_tag("The answer: Emma", "name") == "Emma"
    assert parse_tag("no idea", "name") is None


def test_metadata_from_pdnc_index_or_folder(shared_data: Path) -> None:
    m = novel_meta(shared_data / "pdnc" / "Persuasion")
    assert (m.title, m.author) == ("Persuasion", "Jane Austen")
    assert novel_meta(TINY).title == "A Quiet Morning"


# -- name cloze ------------------------------------------------------------------------------


def test_cloze_passage_by_hand() -> None:
    s1 = " ".join(["word"] * 20) + "."
    text = f"{s1} Then Anne spoke to the room at last. {s1} Anne and Walter left."
    got = name_cloze.cloze_passages(text, {"Anne", "Walter"}, min_tokens=20, max_tokens=40)
    assert [g["answer"] for g in got] == ["Anne"]
    assert got[0]["passage"].count("[MASK]") == 1 and "Anne" not in got[0]["passage"]


def test_cloze_passages_on_a_novel(shared_data: Path) -> None:
    novel = load_novel(shared_data / "pdnc" / "Persuasion")
    names = name_cloze.name_words(novel)
    got = name_cloze.cloze_passages(novel.text, names)
    assert len(got) > 100
    pat = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
    for g in got:
        assert g["answer"] in names and g["passage"].count("[MASK]") == 1
        assert not pat.search(g["passage"]), g  # exactly one name, the masked one
        n = len(re.findall(r"\w+(?:['’]\w+)*|[^\w\s]", g["passage"].replace("[MASK]", "X")))
        assert 40 <= n <= 60


# The first line of the authors' released ``data/pdnc_source/Emma/Emma.name_cloze.txt``
# (deezer/llms_quotation_attribution; the file is not in the shared data), tabs and newline.
EMMA_LINE = ("Emma\t45\t263\t256\t301\tEmma\tThe real evils, indeed, of [MASK]'s situation "
             "were the power of having rather too much her own way, and a disposition to think "
             "a little too well of herself; these were the disadvantages which threatened alloy "
             "to her many enjoyments.\n")


def test_cloze_prompt_is_the_authors_byte_for_byte() -> None:
    # main_name_cloze.py: read_data (l. 58-63) keeps each line's "\n" in its last field,
    # passage = d[6] (l. 162), predict (l. 86-101) formats "...Input: %s\nOutput: \n\n"
    passage = tuple(EMMA_LINE.split("\t"))[6]
    want = (
        "You have seen the following passage in your training data. What is the proper name "
        "that fills in the [MASK] token in it?  This name is exactly one word long, and is a "
        "proper name (not a pronoun or any other word). You must make a guess, even if you "
        "are uncertain.   \n    \nYou must format your answer in <name>[NAME]</name> tags."
        "\n\nExample:\n\nInput: Stay gold, [MASK], stay gold.\nOutput: <name>Ponyboy</name>"
        "\n\nInput: The door opened, and [MASK], dressed and hatted, entered with a cup of "
        "tea.\nOutput: <name>Gerty</name>\n\nInput: The real evils, indeed, of [MASK]'s "
        "situation were the power of having rather too much her own way, and a disposition "
        "to think a little too well of herself; these were the disadvantages which threatened "
        "alloy to her many enjoyments.\n\nOutput: \n\n")
    assert name_cloze.prompt(passage) == want
    assert name_cloze.prompt(passage.rstrip("\n")) == want  # ours: no newline of its own
    model = ScriptedModel(reply)  # and the job sends it
    job = make_job("name_cloze", {"novels": [str(TINY)], "n": 2, "min_tokens": 8,
                                  "max_tokens": 40}, 0)
    recs = run(job, model)
    assert recs and [r.messages[-1].content for r in model.requests if r.messages] == [
        name_cloze.prompt(r["passage"]) for r in recs]
    assert all(not r["passage"].endswith("\n") for r in recs)
    assert model.requests[0].messages[-1].content.endswith(  # type: ignore[index]
        recs[0]["passage"] + "\n\nOutput: \n\n")


# The second line of the authors' Emma file: a name after an honorific, which our rules
# never mask (here the released passage is read as it is).
EMMA_LINE_2 = ("Emma\t44\t344\t302\t346\tTaylor\tThe danger, however, was at present so "
               "unperceived, that they did not by any means rank as misfortunes with her. Sorrow "
               "came--a gentle sorrow--but not at all in the shape of any disagreeable "
               "consciousness.--Miss [MASK] married.\n")


def test_the_released_passages_are_read_as_the_authors_read_them(
        shared_data: Path, tmp_path: Path) -> None:
    """``--passages released``: the lines of the authors' ``<novel>.name_cloze.txt`` (under
    any folder of their data; PDNC's AlicesAdventuresInWonderland is their
    AliceInWonderland), the answer field 6 and the passage the last, its newline kept, so
    the prompt is theirs byte for byte; scored, the answer joins the candidates."""
    emma = tmp_path / "data" / "pdnc_source" / "Emma"
    emma.mkdir(parents=True)
    (emma / "Emma.name_cloze.txt").write_text(EMMA_LINE + EMMA_LINE_2, encoding="utf-8")
    params = {"novels": [str(shared_data / "pdnc" / "Emma")], "passages": "released",
              "released": str(tmp_path / "data"), "scoring": "logprob"}
    items = [it.payload for it in make_job("name_cloze", params, 0).items()]
    assert sorted((p["answer"], p["passage"]) for p in items) == [
        ("Emma", EMMA_LINE.split("\t")[6]), ("Taylor", EMMA_LINE_2.split("\t")[6])]
    assert all(p["answer"] in p["candidates"] for p in items)
    assert name_cloze.prompt(items[0]["passage"]).endswith(".\n\nOutput: \n\n")
    job = make_job("name_cloze", params, 0)
    assert set(job.input_files()) == {"novel0", "released0"}
    alice = params | {"novels": [str(shared_data / "pdnc" / "AlicesAdventuresInWonderland")]}
    with pytest.raises(ConfigError, match="AliceInWonderland/AliceInWonderland"):
        make_job("name_cloze", alice, 0).items()
    with pytest.raises(ConfigError, match="needs params.released"):
        make_job("name_cloze", params | {"released": None}, 0).items()
    (emma / "Emma.name_cloze.txt").write_text("Emma\tno mask\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not a name-cloze line"):
        make_job("name_cloze", params, 0).items()


# -- CSG -------------------------------------------------------------------------------------


def test_replacement_keeps_honorifics_by_hand() -> None:
    c = PdncCharacter("0", "Harriet Bates", ("Miss Bates", "Harriet", "Harriet Bates"), "F",
                      "major")
    m = csg.replacement_names(c, "Harriet Bates and Miss Bates, Harriet.")
    # never "Emma Stone" (a celebrity: the paper, appendix B); "Bates" alone is a part of her
    # names that no alias covers, and goes too
    assert m == {"Harriet Bates": "Emma Walker", "Miss Bates": "Miss Walker",
                 "Harriet": "Emma", "Bates": "Walker"}
    text, n = csg.corrupt("Miss Bates met Harriet; Harriet Bates laughed. Harrieta", m)
    assert (text, n) == ("Miss Walker met Emma; Emma Walker laughed. Harrieta", 3)
    assert csg.corrupt("Bates alone", m) == ("Walker alone", 1)
    c2 = PdncCharacter("1", "Captain Wentworth", ("Wentworth", "Frederick",
                                                  "Frederick Wentworth"), "M", "major")
    m2 = csg.replacement_names(c2, "Captain Wentworth, Frederick, Henry, Smith")
    assert m2 == {"Captain Wentworth": "Captain Stone", "Wentworth": "Stone",
                  "Frederick": "Joseph", "Frederick Wentworth": "Joseph Stone"}  # Henry occurs
    assert csg.replacement_names(PdncCharacter("2", "Pat", (), "X", "major"), "") is None


@pytest.mark.parametrize("folder", NOVELS)
def test_csg_passages_on_novels(shared_data: Path, folder: str) -> None:
    novel = load_novel(shared_data / "pdnc" / folder)
    sents = sentence_spans(novel.text)
    cache: dict[str, Any] = {}
    items = [it for q in novel.quotations if (it := csg.csg_item(novel, q, sents, 10, cache))]
    assert len(items) >= 20
    by_id = {q.id: q for q in novel.quotations}
    for it in items:
        c = novel.character(it["speaker"])
        assert c is not None
        for name in names_of(c):  # never leaves the original name
            assert not occurs(it["passage"], name), (name, it["quote_id"])
            assert not occurs(it["quote"], name)
        for part in csg.name_parts(c):  # nor any part of one ("May" of "May Welland")
            assert not occurs(it["passage"], part) and not occurs(it["quote"], part), part
        assert not set(it["corrupted"]) & csg.CELEBRITIES
        for new in it["corrupted"]:  # replacement names do not occur in the novel
            hon, rest = split_honorific(new)
            assert not hon or hon in c.name or any(hon in a for a in c.aliases)
            for w in rest.split():
                assert w in NEW_NAMES and not occurs(novel.text, w), (w, folder)
        # one remains, a word or (the authors' str.replace) inside one: "Musgroves" ->
        # "Stones"
        assert any(new in it["passage"] for new in it["corrupted"])
        assert (it["passage"].count("[MASK]") == 1) == (it["quote_type"] == "Explicit")
        assert by_id[it["quote_id"]].quote_type == it["quote_type"]


def test_corruption_leaves_no_part_of_a_name_the_aliases_miss() -> None:
    """PDNC lists "Charles Musgrove" alone for Charles; "Charles" in the passage is his too
    (the authors' hand-made table maps it): corrupted, or the item is dropped."""
    c = PdncCharacter("6", "Charles Musgrove", ("Charles Musgrove",), "M", "intermediate")
    m = csg.replacement_names(c, "")
    assert m == {"Charles Musgrove": "Henry Stone", "Charles": "Henry", "Musgrove": "Stone"}
    text, _ = csg.corrupt("Charles came in; Mr Musgrove and Charles Musgrove.", m)
    assert text == "Henry came in; Mr Stone and Henry Stone." and not csg.remaining_parts(
        c, text)
    assert csg.remaining_parts(c, "Charles came") == ["Charles"]
    for first in ("Emma", "Joseph", "Alice"):  # every celebrity pair of the lists is skipped
        pair = csg._pair({"Emma": "F", "Joseph": "M", "Alice": "F"}[first],
                         " ".join(n for n in ("Elizabeth", "Henry", "Clara") if n != first))
        assert pair is not None and f"{pair[0]} {pair[1]}" not in csg.CELEBRITIES


def test_main_speakers_and_the_authors_tables(shared_data: Path, tmp_path: Path) -> None:
    """By default the quotes of the 5 characters with the most quotes; with the authors'
    hand-made tables (id2replacements.pkl), their speakers and names; a pickle holding
    anything but plain data is refused."""
    import pickle

    folder = shared_data / "pdnc" / "Persuasion"
    novel = load_novel(folder)
    main = csg.main_speakers(novel, 5)
    assert main is not None and len(main) == 5 and {"1", "4"} <= main  # Anne, Wentworth
    job = make_job("csg", {"novels": [str(folder)], "n": 50}, 0)
    speakers = {it.payload["speaker"] for it in job.items()}
    assert speakers <= {c.name for c in novel.characters if c.id in main}
    table = {1: {"Anne": "Emma", "Anne Elliot": "Emma Walker", "Miss Anne": "Miss Emma",
                 "Miss Anne Elliot": "Miss Emma Walker"}}  # the authors' entry for Anne
    (tmp_path / "Persuasion").mkdir()
    (tmp_path / "Persuasion" / "id2replacements.pkl").write_bytes(pickle.dumps(table))
    job = make_job("csg", {"novels": [str(folder)], "n": 50, "replacements": str(tmp_path)}, 0)
    items = [it.payload for it in job.items()]
    assert items and {it["speaker"] for it in items} == {"Anne Elliot"}
    assert all(set(it["corrupted"]) <= set(table[1].values()) for it in items)
    assert all("Anne" not in it["passage"].split() for it in items)
    (tmp_path / "Persuasion" / "id2replacements.pkl").write_bytes(
        pickle.dumps({1: {"x": Path("y")}}))  # a class: refused, never called
    with pytest.raises(ConfigError, match="refusing to load"):
        make_job("csg", {"novels": [str(folder)], "replacements": str(tmp_path)}, 0).items()


def test_honorifics_kept_on_a_novel(shared_data: Path) -> None:
    novel = load_novel(shared_data / "pdnc" / "Emma")
    c = novel.character("Miss Bates")
    assert c is not None
    m = csg.replacement_names(c, novel.text)
    assert m is not None and m["Miss Bates"].startswith("Miss ")
    assert m["Miss Bates"].split()[1] not in novel.text.split()


# -- quotation attribution -------------------------------------------------------------------


def test_chunks_by_hand() -> None:
    words = [(i * 2, i * 2 + 1, 1) for i in range(10)]  # ten one-token words
    assert qa.chunk_spans(words, [], 4, 1) == [(0, 7), (6, 13), (12, 19)]
    # a cut inside a quote moves to its end; the next chunk starts at its start
    assert qa.chunk_spans(words, [(5, 9)], 4, 1)[:2] == [(0, 9), (5, 13)]
    with pytest.raises(ConfigError, match="stride_tokens"):
        qa.chunk_spans(words, [], 4, 4)


@pytest.mark.parametrize("unit", ["subquote", "quote"])
@pytest.mark.parametrize("folder", NOVELS)
def test_chunking_covers_every_quote(shared_data: Path, folder: str, unit: str) -> None:
    """Every quote of the unit (each span of quoteByteSpans, or each whole quotation) lies
    whole in some chunk of the passage the prompt shows, hard wraps joined: marked by exactly
    two ``|n|``, all its words in order between them; the unwrapped passage is the raw
    marked one unwrapped, with the same quotes marked."""
    novel = load_novel(shared_data / "pdnc" / folder)
    params = {"novels": [str(shared_data / "pdnc" / folder)], "chunk_tokens": 300,
              "stride_tokens": 60, "unit": unit}
    job = make_job("quote_attribution", params, 0)
    raw_job = make_job("quote_attribution", {**params, "unwrap": False}, 0)
    model = ScriptedModel()  # no tokenizer: one token per word
    covered, joined = set(), 0
    for it in job.items():
        x = it.payload
        quotes = {q["id"]: q for q in x["quotes"]}
        for s, e in job.chunks(x, model):  # type: ignore[attr-defined]
            passage, ids = job.passage(x, s, e)  # type: ignore[attr-defined]
            raw, raw_ids = raw_job.passage(x, s, e)  # type: ignore[attr-defined]
            assert ids == raw_ids and passage == qa.unwrap(raw)
            joined += raw.count("\n") - passage.count("\n")
            covered |= set(ids)
            for n, qid in enumerate(ids, 1):
                assert passage.count(f"|{n}|") == 2, (qid, n)
                seg = passage.split(f"|{n}|")[1]
                words = novel.text[quotes[qid]["start"]:quotes[qid]["end"]].replace("_", " ")
                assert " ".join(words.split()) in " ".join(seg.split()), qid
    assert joined > 1000  # PDNC's texts are hard-wrapped: the prompt's lines are joined
    wanted = set()
    for q in novel.quotations:
        if q.speaker not in {"_group", "_unknowable", "_narr"}:
            wanted |= ({f"{q.id}-{k}" for k in range(len(q.spans))} if unit == "subquote"
                       else {q.id})
    assert covered <= wanted and len(wanted - covered) <= 0.01 * len(wanted), wanted - covered


def test_alias_mapping_is_exact(shared_data: Path) -> None:
    novel = load_novel(shared_data / "pdnc" / "Persuasion")
    table = qa.alias_table(novel, {q.speaker for q in novel.quotations})
    anne = novel.character("Anne Elliot")
    assert anne is not None
    for name in (anne.name, *anne.aliases):
        assert qa.map_prediction(name, table) == anne.id
    # Bare "Elliot", worked by hand from PDNC's Persuasion lists: of the characters who
    # speak, the names with an honorific that leave "Elliot" are only "Mr Elliot" (William
    # Walter Elliot, id 30); "Miss Anne Elliot" leaves "Anne Elliot" and "Sir Walter Elliot"
    # leaves "Walter Elliot". "Miss Elliot" (id 17) would be a second one, but she never
    # speaks, so she is not listed: "Elliot" names William Walter Elliot alone.
    william = novel.character("William Walter Elliot")
    assert william is not None and william.id == "30" and "Mr Elliot" in william.aliases
    assert "Miss Elliot" not in {q.speaker for q in novel.quotations} and "Miss Elliot" not in table
    assert qa.map_prediction("Elliot", table) == "30"
    assert qa.map_prediction("Walter Elliot", table) == novel.character("Sir Walter Elliot").id  # type: ignore[union-attr]
    # ...and with Miss Elliot among the speakers, "Elliot" is ambiguous: no entry at all
    assert qa.map_prediction("Elliot", qa.alias_table(
        novel, {q.speaker for q in novel.quotations} | {"Miss Elliot"})) is None
    # "Croft" is ambiguous as it is: both Admiral Croft and Mrs Croft speak
    assert qa.map_prediction("Croft", table) is None and "Croft" not in table
    for wrong in ("anne", "Anne Elliot.", "Miss Anne Elliott", "Ann", None, "Anne and Mary"):
        assert qa.map_prediction(wrong, table) is None
    assert qa.map_prediction("Wentworth", table) == novel.character("Captain Wentworth").id  # type: ignore[union-attr]
    text = qa.names_text(novel, table)
    assert "Anne Elliot=Anne=Miss Anne=Miss Anne Elliot" in text.splitlines()


def test_parse_predictions() -> None:
    assert qa.parse_predictions("{\n'quote_id_1' : 'Anne',\n'2': \"Mary\"}") == {
        "1": "Anne", "2": "Mary"}
    assert qa.parse_predictions("1: Anne\n2: 'Mary'\n") == {"1": "Anne", "2": "Mary"}
    assert qa.parse_predictions("I cannot") == {}
    # SmolLM2's replies: a name with an apostrophe in single quotes; cut off at the limit
    assert qa.parse_predictions("{\n'quote_id_1' : 'The Queen's Speech',\n'quote_id_2' : "
                                "'Alice'\n}") == {"1": "The Queen's Speech", "2": "Alice"}
    assert qa.parse_predictions("{\n'quote_id_1' : 'Bingley',\n'quote_id_2' : 'Bingley',"
                                "\n'quote_id_3'") == {"1": "Bingley", "2": "Bingley"}


# -- the jobs on a scripted model ------------------------------------------------------------


def reply(req: GenerationRequest) -> str:
    prompt = req.messages[-1].content if req.messages else req.prompt or ""
    if "|quote_id|" in prompt:
        n = len(set(re.findall(r"\|(\d+)\|", prompt.split("**Names**")[0])))
        return "{" + ", ".join(f"'{i}': 'Robert'" for i in range(1, n + 1)) + "}"
    if "<speaker>" in prompt:
        return "<speaker>Emma Walker</speaker>"
    return "<name>Robert</name>"


def test_jobs_on_a_tiny_novel_not_in_pdnc() -> None:
    model = ScriptedModel(reply)
    nc = make_job("name_cloze", {"novels": [str(TINY)], "n": 5, "min_tokens": 8,
                                 "max_tokens": 40}, 0)
    recs = run(nc, model)
    assert recs and all(r["prediction"] == "Robert" for r in recs)
    assert all(r["correct"] == (r["answer"] == "Robert") for r in recs)
    job = make_job("csg", {"novels": [str(TINY)], "n": 5, "context_sentences": 1}, 0)
    recs = run(job, model)
    assert recs and {r["quote_type"] for r in recs} <= {"Explicit", "Anaphoric", "Implicit"}
    for r in recs:
        assert r["reasoning"] == (r["speaker"] == "Harriet Bates") and not r["memorization"]
        assert "Harriet" not in r["passage"] and "Bates" not in r["passage"]
    scores = csg.csg_scores(recs)["tiny_novel"]
    types = scores["reasoning_by_type"]
    assert scores["csg_reasoning"] == pytest.approx(sum(types.values()) / len(types))
    task = make_job("quote_attribution", {"novels": [str(TINY)], "chunk_tokens": 60,
                                          "stride_tokens": 20, "min_quotes": 1}, 0)
    recs = run(task, model)
    quotes = [q for r in recs for q in r["quotes"]]
    assert len(quotes) == 12 and all(q["prediction"] == "Robert" for q in quotes)
    assert all(q["correct"] == (q["speaker"] == "1") for q in quotes)
    acc = qa.attribution_accuracy(recs, 1)["tiny_novel"]
    assert acc["all"] == pytest.approx(sum(q["correct"] for q in quotes) / 12)
    assert sum(len(r["chunks"]) for r in recs) > len(recs)  # chunks overlap: incremental ran


def test_empty_novel_list_is_refused() -> None:
    with pytest.raises(ConfigError, match="novels is empty"):
        make_job("csg", {}, 0).items()


class Scorer(ScriptedModel):
    """Log-probability of a text: -1 per word, and +5 for each word in ``liked``."""

    def __init__(self, liked: set[str]) -> None:
        super().__init__()
        self.liked = liked

    async def score(self, texts: list[str]) -> list[Any]:
        from recitation.models.base import TokenScores

        out = []
        for t in texts:
            self.scored.append(t)
            words = re.findall(r"[A-Za-z]+", t)
            out.append(TokenScores(tuple(words), tuple(
                5.0 if w in self.liked else -1.0 for w in words[1:])))
        return out


def test_scoring_variants_pick_the_most_likely_candidate() -> None:
    """scoring='logprob': each candidate filled in and scored; the prediction is the
    candidate of the highest total log-probability (checked by brute force), ties to the
    first; every candidate is scored once per item."""
    from recitation.probes.scoring import best_candidates

    liked = {"Harriet", "Bates"}
    model = Scorer(liked)
    nc = make_job("name_cloze", {"novels": [str(TINY)], "n": 5, "min_tokens": 8,
                                 "max_tokens": 40, "scoring": "logprob"}, 0)
    recs = run(nc, model)
    assert recs and not model.requests  # nothing generated
    for r in recs:
        assert r["answer"] in r["candidates"]
        totals = [sum(5.0 if w in liked else -1.0 for w in re.findall(
            r"[A-Za-z]+", r["passage"].replace("[MASK]", c))[1:]) for c in r["candidates"]]
        assert r["prediction"] == r["candidates"][totals.index(max(totals))]
        assert r["correct"] == (r["prediction"] == r["answer"])
    assert len(model.scored) == sum(len(r["candidates"]) for r in recs)
    job = make_job("csg", {"novels": [str(TINY)], "n": 5, "context_sentences": 1,
                           "scoring": "logprob"}, 0)
    recs = run(job, model)
    assert recs
    for r in recs:
        assert set(r["corrupted"]) <= set(r["candidates"]) and set(r["gold"]) & set(
            r["candidates"])
        assert r["memorization"] == (r["prediction"] in r["gold"])
        if r["speaker"] == "Harriet Bates":  # the liked names are the true speaker's
            assert r["memorization"] and r["prediction"] in {"Harriet", "Bates",
                                                              "Harriet Bates", "Miss Bates"}
    assert asyncio.run(best_candidates(Scorer(set()), [["a b", "a", "a b c"], ["x"]])) == [1, 0]


def test_csg_fill_scores_the_name_at_the_mask() -> None:
    """scoring='fill': explicit quotes whose corrupted passage names the replacement before
    the mask; each candidate is scored after the passage up to the [MASK], followed by the
    word after it; the prediction is the candidate of the highest total log-probability
    (brute force)."""
    liked = {"Harriet", "Bates"}
    model = Scorer(liked)
    params = {"novels": [str(TINY)], "n": 10, "context_sentences": 3}
    recs = run(make_job("csg", {**params, "scoring": "fill"}, 0), model)
    pool = [it.payload for it in make_job("csg", params, 0).items()]
    assert recs and {r["quote_type"] for r in recs} == {"Explicit"}
    assert {r["quote_id"] for r in recs} == {
        g["quote_id"] for g in pool if g["quote_type"] == "Explicit" and csg.misleads(g)}
    assert not model.requests and len(model.scored) == sum(len(r["candidates"]) for r in recs)
    k = 0
    for r in recs:
        texts = model.scored[k:k + len(r["candidates"])]
        k += len(r["candidates"])
        before, after = r["passage"].split("[MASK]")
        assert any(re.search(rf"\b{re.escape(c)}\b", before) for c in r["corrupted"])
        nxt = re.match(r"\s*(\w+|[^\w\s])", after)
        assert texts == [before + c + (nxt.group() if nxt else "") for c in r["candidates"]]
        totals = [sum(5.0 if w in liked else -1.0 for w in re.findall(r"[A-Za-z]+", t)[1:])
                  for t in texts]
        assert r["prediction"] == r["candidates"][totals.index(max(totals))]
        assert r["memorization"] == (r["prediction"] in r["gold"])
        assert r["reasoning"] == (not r["memorization"] and r["prediction"] in r["corrupted"])
        # the liked names are Harriet Bates's: her quotes are hits, Robert Finch's are not
        assert r["memorization"] == (r["speaker"] == "Harriet Bates")
    assert {r["speaker"] for r in recs} == {"Harriet Bates", "Robert Finch"}
    for s in csg.csg_scores(recs).values():
        assert s["csg_memorization"] == s["csg_memorization_cloze"]
    x = {"passage": "Emma came. \"No,\" said [MASK], smiling.", "candidates": ["Anne", "Sir W"],
         "quote_id": "Q", "quote_type": "Explicit", "corrupted": ["Emma"]}
    assert csg._scored_texts(x, "fill") == ['Emma came. "No," said Anne,',
                                                'Emma came. "No," said Sir W,']
    assert csg.misleads(x) and not csg.misleads({**x, "corrupted": ["Clara"]})
    with pytest.raises(ConfigError, match="one \\[MASK\\]"):
        csg._scored_texts({**x, "passage": "no mask"}, "fill")


def test_scoring_needs_log_probabilities() -> None:
    from recitation.models.base import Capabilities

    class NoLogprobs(ScriptedModel):
        capabilities = Capabilities(logprobs=False)

    nc = make_job("name_cloze", {"novels": [str(TINY)], "n": 2, "min_tokens": 8,
                                 "max_tokens": 40, "scoring": "logprob"}, 0)
    with pytest.raises(ConfigError, match="needs log-probabilities"):
        run(nc, NoLogprobs())
