"""A small real version on the embedded SmolLM2: every probe, the task and the analysis on
one PDNC novel (few samples, short generations) and the tiny PDNC-format novel."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recitation.probes import analysis, csg, name_cloze
from recitation.probes import quote_attribution as qa
from recitation.probes.contamination import min_k_by_novel
from recitation.runs.jobs import make_job

pytestmark = pytest.mark.model
TINY = Path(__file__).parent / "data" / "tiny_novel"


def run(job: Any, model: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = asyncio.run(job.run_items(job.items(), model))
    return out


def test_small_real_run_on_smollm2(local_model, shared_data: Path) -> None:  # type: ignore[no-untyped-def]
    novel = str(shared_data / "pdnc" / "Persuasion")
    nc = run(make_job("name_cloze", {"novels": [novel], "n": 2, "max_new_tokens": 10}, 0),
             local_model)
    assert len(nc) == 2 and all(r["output"].strip() for r in nc)
    assert all(r["correct"] == (r["prediction"] == r["answer"]) for r in nc)
    cs = run(make_job("csg", {"novels": [novel], "n": 1, "max_new_tokens": 10}, 0),
             local_model)
    assert {r["quote_type"] for r in cs} == {"Explicit", "Anaphoric", "Implicit"}
    for r in cs:
        assert r["memorization"] == (r["prediction"] in r["gold"])
        assert not (r["memorization"] and r["reasoning"])
    ct = run(make_job("contamination", {"novels": [novel], "max_records": 3}, 0), local_model)
    scored = [r for r in ct if not r["skipped"]]
    assert scored
    direct = local_model.score_sync([r["text"] for r in scored])
    for r, ts in zip(scored, direct, strict=True):
        lp = np.sort(np.array(ts.logprobs))
        for k in (10, 20, 30):
            n = max(1, math.floor(len(lp) * k / 100))
            assert r["min_k"][f"{k}"] == pytest.approx(float(lp[:n].mean()), abs=1e-4)
        assert r["min_k"]["10"] <= r["min_k"]["20"] <= r["min_k"]["30"] < 0
    task = run(make_job("quote_attribution", {"novels": [str(TINY)], "chunk_tokens": 200,
                                              "stride_tokens": 50, "min_quotes": 1,
                                              "max_new_tokens": 40}, 0), local_model)
    quotes = [q for r in task for q in r["quotes"]]
    assert len(quotes) == 12
    figures = analysis.per_novel_figures([
        ("name_cloze", {}, nc), ("csg", {}, cs), ("contamination", {}, ct),
        ("quote_attribution", {"min_quotes": 1}, task)])
    assert figures["Persuasion"]["name_cloze"] == name_cloze.per_novel_accuracy(nc)[
        "Persuasion"][0]
    assert figures["Persuasion"]["csg_m"] == csg.csg_scores(cs)["Persuasion"][
        "csg_memorization"]
    assert figures["Persuasion"]["min_k_10"] == min_k_by_novel(ct)["Persuasion"]["10"]
    assert figures["tiny_novel"]["all"] == qa.attribution_accuracy(task, 1)["tiny_novel"]["all"]
    text, _ = analysis.report(figures)
    assert "| Persuasion | 1 |" in text
