"""The book probes' defaults are the authors' code (deezer/llms_quotation_attribution):

- CSG (``main_speaker_cloze.py``, ``get_corrupted_passages``): each name of the replacement
  table, longest first, replaced with ``str.replace`` in turn, inside words too; a
  memorization hit is an answer equal to one of the table's keys (``pred in gold``, gold the
  keys), a reasoning hit one equal to a value. Ours are options: whole-word corruption
  (``corruption="word"``) and PDNC's names as the answers (``answers="aliases"``).
- Min-K% (``main_contamination.py``): every record scored at k = 5, 10, 20, 30, 40 and 50%
  (their ``k_perc``), and its perplexity kept beside.

The expected values are worked by hand from those definitions, or recomputed here in other
terms (a geometric mean for the perplexity, a sorted list for Min-K%)."""

from __future__ import annotations

import ast
import asyncio
import csv
import heapq
import math
import pickle
from pathlib import Path
from typing import Any

import pytest

from recitation.cli import main
from recitation.models.base import GenerationRequest
from recitation.models.scripted import ScriptedModel
from recitation.probes import analysis, csg
from recitation.probes.contamination import ContaminationParams
from recitation.runs.jobs import make_job
from recitation.runs.runner import list_runs
from recitation.runs.store import RunStore

AUTHORS_K_PERC = [0.05, 0.1, 0.2, 0.3, 0.4, 0.5]  # main_contamination.py, k_perc
# the authors' released id2replacements.pkl entry for Charles Musgrove (Persuasion, id 6)
CHARLES = {"Charles Musgrove": "Henry Stone", "Charles": "Henry", "Musgrove": "Stone"}


def run(job: Any, model: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = asyncio.run(job.run_items(job.items(), model))
    return out


# -- CSG corruption ---------------------------------------------------------------------------


def test_substring_corruption_by_hand() -> None:
    table = {"Tom": "Joseph", "Tom Chitling": "Joseph Stone", "Chitling": "Stone"}
    # "Tom Chitling" first (the longest); "Chitling" is then gone; "Tom" everywhere after,
    # inside "Tomorrow" too; the count is of the names found (2), not of the mentions (3)
    text = "Tom Chitling said Tomorrow to Tom."
    assert csg.corrupt_substrings(text, table) == (
        "Joseph Stone said Josephorrow to Joseph.", 2)
    # ours, as the option: whole words, one pass, the count of mentions
    assert csg.corrupt(text, table) == ("Joseph Stone said Tomorrow to Joseph.", 2)
    # in turn: a shorter name is also replaced inside an earlier replacement
    assert csg.corrupt_substrings("Ann Lee and Ann", {"Ann Lee": "Annabel", "Ann": "X"}) == (
        "Xabel and X", 2)
    # names of one length in the table's order; a name found again counts once
    assert csg.corrupt_substrings("aba", {"ab": "X", "ba": "Y"}) == ("Xa", 1)
    assert csg.corrupt_substrings("aba", {"ba": "Y", "ab": "X"}) == ("aY", 1)
    assert csg.corrupt_substrings("Tom, Tom, Tom", {"Tom": "Joe"}) == ("Joe, Joe, Joe", 1)
    assert csg.corrupt_substrings("nobody", {"Tom": "Joe"}) == ("nobody", 0)
    # markup: "_Alice's" is no whole word "Alice", a substring all the same
    assert csg.corrupt_substrings("_Alice's_", {"Alice": "Emma"})[0] == "_Emma's_"
    assert csg.corrupt("_Alice's_", {"Alice": "Emma"})[0] == "_Alice's_"


def _pdnc_names(folder: Path, cid: str) -> set[str]:
    """Main name and aliases of one character, read from character_info.csv directly."""
    with (folder / "character_info.csv").open(newline="", encoding="utf-8") as fh:
        row = next(r for r in csv.DictReader(fh) if r["Character ID"] == cid)
    return {row["Main Name"], *ast.literal_eval(row["Aliases"])}


def _answer(name: str) -> Any:
    def reply(req: GenerationRequest) -> str:
        return f"<speaker>{name}</speaker>"
    return reply


def test_answers_are_the_tables_keys(shared_data: Path, tmp_path: Path) -> None:
    """With the authors' table for Charles Musgrove, "Charles" (a key, not a PDNC name of
    his) is a memorization hit by default, not with answers="aliases"; "Henry" (a value) is
    a reasoning hit either way; the passages are corrupted the authors' way by default."""
    assert (csg.CsgParams().corruption, csg.CsgParams().answers) == ("substring", "table")
    folder = shared_data / "pdnc" / "Persuasion"
    (tmp_path / "Persuasion").mkdir()
    (tmp_path / "Persuasion" / "id2replacements.pkl").write_bytes(pickle.dumps({6: CHARLES}))
    pdnc = _pdnc_names(folder, "6")
    assert "Charles" not in pdnc
    params = {"novels": [str(folder)], "n": 3, "replacements": str(tmp_path)}
    for answers, gold in (("table", set(CHARLES)), ("aliases", pdnc)):
        job = make_job("csg", {**params, "answers": answers}, 0)
        mem = run(job, ScriptedModel(_answer("Charles")))
        assert mem and {r["speaker"] for r in mem} == {"Charles Musgrove"}
        for r in mem:
            assert set(r["gold"]) == gold and set(r["corrupted"]) == set(CHARLES.values())
            assert r["memorization"] == (answers == "table") and not r["reasoning"]
            assert not any(n in r["passage"] for n in ("Charles", "Musgrove"))
        rea = run(job, ScriptedModel(_answer("Henry")))
        assert all(r["reasoning"] and not r["memorization"] for r in rea)
    word = make_job("csg", {**params, "corruption": "word", "n": 100}, 0).items()
    sub = make_job("csg", {**params, "n": 100}, 0).items()
    # "the Musgroves" is a substring of the family name, no whole word: only the default
    # replaces it ("the Stones")
    assert any("Stones" in it.payload["passage"] for it in sub)
    assert not any("Stones" in it.payload["passage"] for it in word)


def test_csg_options_from_the_command_line(shared_data: Path, tmp_path: Path) -> None:
    folder, runs = shared_data / "pdnc" / "Persuasion", tmp_path / "runs"
    args = ["probe", "csg", "--novels", str(folder), "--model", "scripted:echo", "--n", "1",
            "--max-new-tokens", "3", "--runs-dir", str(runs)]
    assert main(args) == 0
    assert main([*args, "--answers", "aliases", "--corruption", "word"]) == 0
    got = {}
    for r in list_runs(runs):
        with RunStore(Path(r["path"])) as store:
            params = store.get_meta("config")["params"]
            got[(params["answers"], params["corruption"])] = [rec for _, rec in
                                                              store.results()]
    assert set(got) == {("table", "substring"), ("aliases", "word")}
    with (folder / "character_info.csv").open(newline="", encoding="utf-8") as fh:
        ids = {r["Main Name"]: r["Character ID"] for r in csv.DictReader(fh)}
    for rec in got[("aliases", "word")]:  # PDNC's names of the speaker
        names = _pdnc_names(folder, ids[rec["speaker"]])
        assert rec["speaker"] in rec["gold"] and set(rec["gold"]) <= names
    for rec in got[("table", "substring")]:  # ours: the names and the words of them
        names = _pdnc_names(folder, ids[rec["speaker"]])
        words = {w for n in names for w in n.split()}
        assert names - {"Admiral"} <= set(rec["gold"]) <= names | words


# -- Min-K% ----------------------------------------------------------------------------------


def _lowest_mean(values: list[float], k: float) -> float:
    """The mean of the k% lowest of ``values``, at least one of them."""
    m = max(1, math.floor(len(values) * k / 100))
    return sum(heapq.nsmallest(m, values)) / m


def test_min_k_at_the_authors_ks_with_perplexity(shared_data: Path, tmp_path: Path) -> None:
    """Every scored record has Min-K% at each k of the authors' k_perc and its perplexity,
    the geometric mean of the inverse probabilities of its scored tokens (the scripted
    model: word i after the first has log p = -log(1 + its length))."""
    assert ContaminationParams().ks == [100 * k for k in AUTHORS_K_PERC]
    folder, runs = shared_data / "pdnc" / "Persuasion", tmp_path / "runs"
    base = ["probe", "contamination", "--novels", str(folder), "--model", "scripted:echo",
            "--runs-dir", str(runs), "--max-records", "5"]
    assert main(base) == 0
    assert main([*base, "--ks", "10", "20", "30"]) == 0
    by_ks = {}
    for r in list_runs(runs):
        with RunStore(Path(r["path"])) as store:
            recs = [rec for _, rec in store.results() if not rec["skipped"]]
        by_ks[len(recs[0]["min_k"])] = recs
    assert sorted(by_ks) == [3, 6]
    assert {tuple(r["min_k"]) for r in by_ks[3]} == {("10", "20", "30")}
    for r in by_ks[6]:
        words = r["text"].split()[1:]
        lps = [-math.log(1 + len(w)) for w in words]
        assert set(r["min_k"]) == {f"{100 * k:g}" for k in AUTHORS_K_PERC}
        for k in AUTHORS_K_PERC:
            assert r["min_k"][f"{100 * k:g}"] == pytest.approx(_lowest_mean(lps, 100 * k))
        inv = math.prod((1 + len(w)) ** (1 / len(words)) for w in words)
        assert r["perplexity"] == pytest.approx(inv)


def test_min_k_columns_and_the_propensity_covariate() -> None:
    """With the six k, the report lists Min-K% by k and matches on Min-10%."""
    cols = [f"min_k_{k}" for k in (5, 10, 20, 30, 40, 50)]
    figures = {f"N{i}": {"csg_m": i / 10, "name_cloze": (i * 7 % 10) / 10, "all": 0.5 + i / 50,
                         **{c: -10 + ((i * 3 + j) % 7) / 10 for j, c in enumerate(cols)}}
               for i in range(10)}
    text, numbers = analysis.report(figures, frozenset({"N1", "N4"}))
    assert "covariates: csg_m, name_cloze, min_k_10, all" in text
    header = next(line for line in text.splitlines() if line.startswith("| novel | group"))
    assert header.index("min_k_5 ") < header.index("min_k_10") < header.index("min_k_50")
    assert set(numbers["propensity"].get("tests", {})) <= {*cols, "all"}
