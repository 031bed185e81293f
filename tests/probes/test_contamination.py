"""Annotation contamination (Min-K%): which records are scored. The authors'
``main_contamination.py`` keeps the records of more than 16 and fewer than 256 tokens, then
samples ``int(0.2 * kept)`` of them per novel; checked here by counting the tokens of every
record in the test, on synthetic novels with records of chosen lengths."""

from __future__ import annotations

import asyncio
import csv
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from recitation.cli import main
from recitation.models.scripted import ScriptedModel
from recitation.runs.jobs import make_job
from recitation.runs.runner import list_runs
from recitation.runs.store import RunStore

# whitespace words of each verbalized record ("quoteID: Qi; quoteText: w w ..."): 16 and 256
# sit on the bounds for whitespace counts, 8 and 128 words (16 and 256 tokens) for the
# two-tokens-a-word tokenizer below; most records are short (5) or inside (40), a few long
BOUNDS = [8, 9, 15, 16, 17, 127, 128, 255, 256, 257]
NOVELS = {"NovelA": BOUNDS + [5] * 30 + [40] * 20 + [300] * 3,
          "NovelB": [5] * 12 + [40] * 9 + [17, 255, 256, 16]}


class TwoPerWord:
    """A tokenizer of two ids per whitespace word: its counts differ from words."""

    vocab_size = 2

    def encode(self, text: str) -> list[int]:
        return [0, 1] * len(text.split())

    def decode(self, ids: list[int]) -> str:
        return ""

    def tokens(self, text: str) -> list[str]:
        return [t for w in text.split() for t in (w, "")]


class TokenizedModel(ScriptedModel):
    def tokenizer(self) -> Any:
        return TwoPerWord()


def _write_novels(root: Path) -> list[str]:
    folders = []
    for name, lengths in NOVELS.items():
        folder = root / name
        folder.mkdir()
        with (folder / "quotation_info.csv").open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh, quoting=csv.QUOTE_ALL)
            w.writerow(["quoteID", "quoteText"])
            for i, n in enumerate(lengths):
                w.writerow([f"Q{i}", " ".join(["w"] * (n - 3))])
        folders.append(str(folder))
    return folders


def _count(model: ScriptedModel, text: str) -> int:
    """The test's own count: the model's tokenizer when it has one, else whitespace words."""
    tok = model.tokenizer()
    return len(tok.encode(text)) if tok is not None else len(text.split())


def _run(folders: list[str], model: ScriptedModel, seed: int = 0,
         **params: Any) -> list[dict[str, Any]]:
    job = make_job("contamination", {"novels": folders, **params}, seed)
    out: list[dict[str, Any]] = asyncio.run(job.run_items(job.items(), model))
    return out


def _passing(folders: list[str], model: ScriptedModel) -> dict[str, set[str]]:
    """novel -> the quote ids of its records of more than 16 and fewer than 256 tokens,
    counted on the records as the CSV verbalizes them (column: value; ...)."""
    out: dict[str, set[str]] = {}
    for folder in folders:
        with (Path(folder) / "quotation_info.csv").open(newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        out[Path(folder).name] = {
            r["quoteID"] for r in rows
            if 16 < _count(model, f"quoteID: {r['quoteID']}; quoteText: {r['quoteText']}") < 256}
    return out


def _scored(recs: list[dict[str, Any]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {n: set() for n in NOVELS}
    for r in recs:
        if not r["skipped"]:
            out[r["novel"]].add(r["text"].split(";")[0].removeprefix("quoteID: "))
    return out


@pytest.mark.parametrize("model", [ScriptedModel(), TokenizedModel()], ids=["words", "tokens"])
def test_bounds_are_strict_and_counted_with_the_models_tokenizer(
        tmp_path: Path, model: ScriptedModel) -> None:
    folders = _write_novels(tmp_path)
    recs = _run(folders, model, fraction=1.0)  # everything inside the bounds is scored
    passing = _passing(folders, model)
    assert _scored(recs) == passing
    counts = Counter(_count(model, r["text"]) for r in recs)
    # records on both bounds, and just inside each (17 or 18, 255 or 254 tokens)
    assert counts[16] and counts[256] and counts[17] + counts[18] and counts[255] + counts[254]
    for r in recs:  # exactly 16 or 256 tokens: skipped, as every record outside
        n = _count(model, r["text"])
        assert r["skipped"] == (not 16 < n < 256), (n, r["skipped"])


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize(("fraction", "cap"), [(0.2, None), (0.5, None), (0.5, 3)])
def test_filter_first_then_sample_a_fraction_of_the_rest(
        tmp_path: Path, seed: int, fraction: float, cap: int | None) -> None:
    """Per novel exactly int(fraction * records inside the bounds) are scored (at most the
    cap), all of them inside. Sampling before filtering (our former order) scores as many
    as its draw of all the records happens to hold inside: more or fewer, and with a cap
    fewer whenever the draw holds one outside (14 of these 15 cases fail on that order)."""
    folders, model = _write_novels(tmp_path), ScriptedModel()
    params: dict[str, Any] = {"fraction": fraction}
    if cap:
        params["max_records"] = cap
    scored, passing = _scored(_run(folders, model, seed, **params)), _passing(folders, model)
    for novel, ids in passing.items():
        want = int(fraction * len(ids))
        assert len(scored[novel]) == (min(want, cap) if cap else want), (novel, seed)
        assert scored[novel] <= ids
    assert scored == _scored(_run(folders, ScriptedModel(), seed, **params))  # seeded


def test_a_run_draws_as_the_job_does(tmp_path: Path) -> None:
    """Through the runner (one item a chunk for the scripted backend): the same records as
    one call on all the items."""
    folders, runs = _write_novels(tmp_path), tmp_path / "runs"
    assert main(["probe", "contamination", "--novels", *folders, "--model", "scripted:echo",
                 "--runs-dir", str(runs), "--seed", "3", "--fraction", "0.5"]) == 0
    (run,) = list_runs(runs)
    with RunStore(Path(run["path"])) as store:
        stored = [r for _, r in store.results()]
    assert len(stored) == sum(len(v) for v in NOVELS.values())
    assert _scored(stored) == _scored(_run(folders, ScriptedModel(), 3, fraction=0.5))
