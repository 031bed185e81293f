"""The detect job's control flow on the scripted model: one output schema, batched calls,
call estimates that match the calls made, cached and resumable runs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from recitation.detect.job import DetectJob, DetectParams
from recitation.detect.report import estimate_calls
from recitation.detect.samples import load_samples
from recitation.errors import ConfigError
from recitation.models.base import GenerationRequest
from recitation.models.managed import ManagedModel
from recitation.models.scripted import ScriptedModel
from recitation.runs.config import parse_config
from recitation.runs.jobs import make_job
from recitation.runs.runner import create_run, execute
from recitation.runs.store import RunStore

MEMBERS = ["The LORD is my shepherd; I shall not want. He maketh me to lie down in green "
           "pastures: he leadeth me beside the still waters.",
           "In the beginning God created the heaven and the earth. And the earth was without "
           "form, and void; and darkness was upon the face of the deep."]
CONTROLS = ["Consider the snow upon the high places, how it lieth still all the winter long "
            "and maketh no sound, yet it watereth the gardens.",
            "Remember the mapmaker, who drew the rivers and the roads of a country he had "
            "never seen, and men walked by his lines and were not lost."]


def _jsonl(path: Path, texts: list[str]) -> str:
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n"
                            for i, t in enumerate(texts)))
    return str(path)


@pytest.fixture
def params(tmp_path: Path) -> dict[str, object]:
    return {"members": [_jsonl(tmp_path / "m.jsonl", MEMBERS)],
            "controls": [_jsonl(tmp_path / "c.jsonl", CONTROLS)],
            "perturbations": ["bitflip", "synonym"], "max_intensity": 2, "outputs": 2,
            "n_bootstrap": 50}


class _Counting(ScriptedModel):
    def __init__(self) -> None:
        super().__init__()
        self.generate_calls = 0
        self.score_calls = 0

    async def generate(self, requests: list[GenerationRequest]):  # type: ignore[no-untyped-def]
        self.generate_calls += 1
        return await super().generate(requests)

    async def score(self, texts: list[str]):  # type: ignore[no-untyped-def]
        self.score_calls += 1
        return await super().score(texts)


def test_one_schema_for_every_detector_and_batched_calls(params: dict[str, object]) -> None:
    job = make_job("detect", params, seed=0)
    assert isinstance(job, DetectJob)
    items = job.items()
    assert [it.id.split(":")[0] for it in items] == ["member"] * 2 + ["control"] * 2
    model = _Counting()
    records = asyncio.run(job.run_items(items, model))
    assert model.generate_calls == 1 and model.score_calls == 1  # batched across samples
    cfg = parse_config({"job": "detect", "model": {"backend": "scripted"}, "params": params})
    est = estimate_calls(job, cfg)  # type: ignore[arg-type]
    assert est["generate_calls"] == len(model.requests)
    assert est["score_calls"] == len(model.scored) == 8
    for rec in records:
        names = {s["detector"] for s in rec["scores"]}
        assert {"loss", "zlib", "lowercase", "min_k_10", "min_k_20", "min_k_30"} <= names
        assert {f"pearl_{p}_{s}" for p in ("bitflip", "synonym")
                for s in ("sensitivity", "gfd", "s_m")} <= names
        assert not any(n.startswith("min_k_pp") for n in names)  # scripted: no mu/sigma
        for s in rec["scores"]:
            assert set(s) == {"sample_id", "detector", "score", "higher_means_member"}
            assert s["sample_id"] == rec["sample"]["id"]
        pearl = rec["pearl"]["bitflip"]
        assert len(pearl["perf_mean"]) == 3 and len(pearl["perturbed_inputs"]) == 2


def test_reference_model_shares_the_run_store_and_budget(params: dict[str, object]) -> None:
    params = {**params, "detectors": ["whitebox"],
              "reference_model": {"backend": "scripted", "model": "ref"}}
    job = make_job("detect", params, seed=0)
    managed = ManagedModel(ScriptedModel(name="target"))
    records = asyncio.run(job.run_items(job.items(), managed))
    assert all("reference" in {s["detector"] for s in r["scores"]} for r in records)
    assert job._reference is not None and job._reference.budget is managed.budget  # type: ignore[attr-defined]
    same = {**params, "reference_model": {"backend": "scripted", "model": "target"}}
    job2 = make_job("detect", same, seed=0)
    with pytest.raises(ConfigError, match="must differ"):
        asyncio.run(job2.run_items(job2.items(), managed))


def test_params_are_validated() -> None:
    with pytest.raises(ConfigError, match="perturbation"):
        make_job("detect", {"perturbations": ["bitflop"]}, seed=0)
    assert DetectParams().members == ["kjv:famous"]


def test_runs_are_stored_and_cached(params: dict[str, object], tmp_path: Path) -> None:
    cfg = parse_config({"job": "detect", "model": {"backend": "scripted"}, "params": params})
    first = create_run(cfg, tmp_path / "runs")
    out1 = asyncio.run(execute(first))
    assert out1.status == "completed" and out1.done_items == 4
    with RunStore(first) as store:
        recs = dict(store.results("detect"))
    assert len(recs) == 4 and all(r["scores"] for r in recs.values())
    second = create_run(cfg, tmp_path / "runs")
    out2 = asyncio.run(execute(second))
    assert out2.stats.backend_calls == 0  # seeded sampled calls come from the cache
    assert out2.stats.served_from_cache == out1.stats.backend_calls


def test_sources() -> None:
    kjv = load_samples("kjv:John 3:16-17; Genesis 1:1", "member")
    assert [s.id for s in kjv] == ["kjv:John 3:16-17", "kjv:Genesis 1:1"]
    he = load_samples("humaneval:0-2", "member")
    assert len(he) == 3 and he[0].task == "code" and he[0].prompt and he[0].reference
    fresh = load_samples("builtin:fresh-code", "control")
    for s in fresh:  # the fresh controls are valid Python that runs
        exec(compile(s.text, s.id, "exec"), {})
    assert len(load_samples("builtin:kjv-pastiche", "control", limit=5)) == 5
    with pytest.raises(ConfigError):
        load_samples("nonsense", "member")
