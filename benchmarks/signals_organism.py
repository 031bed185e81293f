"""Detector scores from the token-signal store against scores through the model, on the
quick organism (issue 30: "scores from the token-signal store equal today's detector scores
on the organism benchmark"): the white-box, ReCaLL and DC-PDD detectors on its 15 members
and 15 held-out passages, at each epoch, once scored through the model and once through a
fresh store; the largest absolute difference of any score, and the second pass's model
calls (none: every text is read from the store).

    .venv/bin/python benchmarks/signals_organism.py
"""

from __future__ import annotations

import asyncio
import json
import math
import tempfile
from pathlib import Path
from typing import Any

from recitation.models.base import TokenScores
from recitation.models.local import LocalModel
from recitation.organism.build import build_organism
from recitation.organism.config import make_config
from recitation.organism.data import load_split
from recitation.runs.jobs import make_job


def _names(recs: list[dict[str, Any]]) -> dict[tuple[str, str], float]:
    return {(r["sample"]["id"], s["detector"]): s["score"] for r in recs for s in r["scores"]
            if s["score"] is not None and math.isfinite(s["score"])}


async def one_epoch(spec: str, params: dict[str, Any], store: Path) -> dict[str, Any]:
    model = LocalModel(spec)
    plain = make_job("detect", params, 0)
    want = _names(await plain.run_items(plain.items(), model))
    calls = 0
    real = model.score

    async def counted(texts: list[str]) -> list[TokenScores]:
        nonlocal calls
        calls += len(texts)
        return await real(texts)

    model.score = counted  # type: ignore[method-assign]
    first = make_job("detect", params | {"signals": str(store)}, 0)
    got = _names(await first.run_items(first.items(), model))
    scored_first = calls
    again = make_job("detect", params | {"signals": str(store), "min_k_ngram": 2}, 0)
    await again.run_items(again.items(), model)
    assert got.keys() == want.keys()
    return {"model": spec, "scores": len(want),
            "max_abs_diff": max(abs(got[k] - want[k]) for k in want),
            "texts_scored_into_store": scored_first,
            "texts_scored_on_rerun": calls - scored_first}


def main() -> None:
    org = build_organism(make_config(quick=True))
    split = load_split(org.directory / "split.json")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        files = {}
        for name, member in (("members", True), ("controls", False)):
            files[name] = work / f"{name}.jsonl"
            files[name].write_text("".join(json.dumps({"id": p.id, "text": p.text}) + "\n"
                                           for p in split if p.member == member))
        params = {"members": [str(files["members"])], "controls": [str(files["controls"])],
                  "detectors": ["whitebox", "recall", "dcpdd"]}
        for epoch in (0, 1, 2):
            res = asyncio.run(one_epoch(f"organism:quick:epoch{epoch}", params,
                                        work / "store"))
            print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
