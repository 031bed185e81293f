"""The detect job's control flow on the scripted model: one output schema, batched calls,
call estimates that match the calls made, cached and resumable runs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from recitation.detect.job import DetectJob, DetectParams
from recitation.detect.results import estimate_calls
from recitation.detect.samples import load_samples
from recitation.errors import ConfigError, CorpusError
from recitation.models.base import GenerationRequest
from recitation.models.integrity import PROMPTS, SCORED_TEXTS
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
    """Counts the job's calls, not those of the log-probability integrity check made first
    (recitation.models.integrity: 7 score calls, one generate call; tested there)."""

    def __init__(self) -> None:
        super().__init__()
        self.generate_calls = -1
        self.score_calls = -7

    async def generate(self, requests: list[GenerationRequest]):  # type: ignore[no-untyped-def]
        self.generate_calls += 1
        return await super().generate(requests)

    async def score(self, texts: list[str]):  # type: ignore[no-untyped-def]
        self.score_calls += 1
        return await super().score(texts)

    def job_calls(self) -> tuple[list[GenerationRequest], list[str]]:
        return self.requests[len(PROMPTS):], self.scored[SCORED_TEXTS:]


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
    requests, scored = model.job_calls()
    assert est["generate_calls"] == len(requests)
    assert est["score_calls"] == len(scored) == 8
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
    assert DetectParams().members == ["kjv:famous-long"]
    assert DetectParams().controls == ["builtin:kjv-devotional-long"]  # PEARL-length (>= 250 words)


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


def test_summarization_task_scores_against_the_models_own_answer(
        params: dict[str, object]) -> None:
    params = {**params, "task": "summarization", "detectors": ["pearl"],
              "perturbations": ["case_flip"]}
    job = make_job("detect", params, seed=0)
    model = ScriptedModel(lambda req: "A short summary of the passage.")
    records = asyncio.run(job.run_items(job.items(), model))
    for rec in records:
        p = rec["pearl"]
        assert p["task"] == "summarization" and p["reference"] == "A short summary of the passage."
        assert p["case_flip"]["perf_mean"] == [1.0, 1.0, 1.0]  # same answer: ROUGE-L 1
        assert p["case_flip"]["sensitivity"] == 0.0
    assert all(r.is_chat for r in model.requests)


@pytest.mark.model
def test_token_level_bit_flip_uses_the_local_tokenizer(local_model) -> None:  # type: ignore[no-untyped-def]
    tok = ManagedModel(local_model).tokenizer()
    assert tok is not None and tok.vocab_size >= 49152
    job = make_job("detect", {"perturbations": ["bitflip_tokens"], "limit": 1}, seed=0)
    perts = job.perturbations(ManagedModel(local_model))  # type: ignore[attr-defined]
    text = "The LORD is my shepherd; I shall not want."
    out = [perts["bitflip_tokens"](text, k, 1) for k in range(4)]
    assert out[0] == text and out[3] != text
    assert out[3] == perts["bitflip_tokens"](text, 3, 1)
    assert ScriptedModel().tokenizer() is None


def test_cli_estimate_only(capsys: pytest.CaptureFixture[str]) -> None:
    from recitation.cli import main

    code = main(["detect", "--members", "kjv:John 3:16-17;Genesis 1:1-3", "--controls",
                 "builtin:kjv-pastiche", "--limit", "2", "--outputs", "4", "--estimate-only"])
    out = capsys.readouterr().out
    assert code == 0
    assert "4 samples" in out and "generations" in out and "$0 (local model)" in out


@pytest.mark.slow
@pytest.mark.model
def test_cli_detect_on_the_embedded_model_writes_scores_and_verdicts(tmp_path: Path) -> None:
    from recitation.cli import main

    runs = tmp_path / "runs"
    code = main(["detect", "--members", "kjv:John 3:16-17;Genesis 1:1-3", "--controls",
                 "builtin:kjv-pastiche", "--limit", "2", "--outputs", "1", "--temperature",
                 "0", "--max-intensity", "1", "--max-new-tokens", "8", "--perturbations",
                 "bitflip", "--bootstrap", "20", "--runs-dir", str(runs)])
    assert code == 0
    (run_dir,) = list(runs.iterdir())
    with RunStore(run_dir) as store:
        report = store.get_meta("detect_report")
        results = dict(store.results("detect"))
    assert len(results) == 4
    assert {"loss", "min_k_pp_20", "pearl_bitflip_sensitivity",
            "pearl_bitflip_gfd"} <= set(report["detectors"])
    v = report["detectors"]["loss"]["verdicts"]
    assert len(v) == 2 and all("fpr" in x and "member" in x for x in v)


def test_reference_calls_go_to_the_run_store_through_the_run_context(
        params: dict[str, object], tmp_path: Path) -> None:
    params = {**params, "detectors": ["whitebox"],
              "reference_model": {"backend": "scripted", "model": "ref"}}
    cfg = parse_config({"job": "detect", "model": {"backend": "scripted", "model": "target"},
                        "params": params})
    run = create_run(cfg, tmp_path / "runs")
    assert asyncio.run(execute(run)).status == "completed"
    with RunStore(run) as store:
        models = [c["model"] for c in store.calls()]
    assert models.count("ref") == 4 and models.count("target") == 8


def test_a_token_budget_stops_the_run_and_the_partial_report_is_stored(
        params: dict[str, object], tmp_path: Path) -> None:
    from recitation.detect.results import finalize_run

    cfg = parse_config({"job": "detect", "model": {"backend": "scripted", "batch_size": 1},
                        "budget": {"max_tokens": 400}, "params": params})
    run = create_run(cfg, tmp_path / "runs")
    out = asyncio.run(execute(run))
    assert out.status == "budget_exhausted" and out.done_items < 4
    report = finalize_run(run)
    with RunStore(run) as store:
        assert store.get_meta("detect_report") == json.loads(json.dumps(report))
    assert report["n_members"] + report["n_controls"] == out.done_items


def test_pearl_defaults_are_the_published_ones() -> None:
    p = DetectParams()
    assert (p.temperature, p.passage_words, p.bitflip_scale, p.bitflip_tokenizer,
            p.sensitivity, p.ncd) == (0.3, 250, "published", "auto", "absolute", "zlib")
    s = p.pearl_settings()
    assert (s.temperature, s.sensitivity, s.ncd) == (0.3, "absolute", "zlib")


def test_records_state_the_bit_flip_ids_and_warn_on_short_references(
        params: dict[str, object], caplog: pytest.LogCaptureFixture, require: Any) -> None:
    from recitation.detect.o200k import load_o200k

    require(load_o200k() is not None, "no offline o200k encoding installed: bash scripts/setup.sh "
            "all,dev puts the official file in .venv/share/recitation/tiktoken (pip install "
            "'recitation[detect]' gives rs-bpe's copy)")
    job = make_job("detect", {**params, "detectors": ["pearl"]}, seed=0)
    with caplog.at_level("WARNING", logger="recitation.detect.job"):
        records = asyncio.run(job.run_items(job.items(), ScriptedModel()))
    assert "reference under 40 words" in caplog.text
    for rec in records:
        pearl = rec["pearl"]
        assert pearl["bitflip_scale"] == "published" and "o200k_base" in pearl["bitflip_tokenizer"]
        assert pearl["sensitivity_mode"] == "absolute" and pearl["ncd"] == "zlib"
        assert pearl["reference_words"] < 40
        assert pearl["warnings"] == [f"reference of {pearl['reference_words']} words (< 40)"]


def test_variants_stay_available_as_named_options(params: dict[str, object]) -> None:
    job = make_job("detect", {**params, "detectors": ["pearl"], "bitflip_scale": "utf8-percent",
                              "sensitivity": "signed", "ncd": "zlib9", "temperature": 0.7},
                   seed=0)
    records = asyncio.run(job.run_items(job.items(), ScriptedModel()))
    pearl = records[0]["pearl"]
    assert pearl["bitflip_tokenizer"].startswith("none") and pearl["ncd"] == "zlib9"
    perf = pearl["bitflip"]["perf_mean"]
    assert pearl["bitflip"]["sensitivity"] == pytest.approx(
        max(perf[j] - perf[j + 1] for j in range(len(perf) - 1)))
    with pytest.raises(ConfigError):
        make_job("detect", {"bitflip_scale": "percent"}, seed=0)


def test_cli_flags_map_to_params() -> None:
    from recitation.cli import build_parser
    from recitation.detect.cli import _params

    args = build_parser().parse_args(["detect"])
    p = _params(args)
    assert (p["temperature"], p["bitflip_scale"], p["sensitivity"], p["ncd"],
            p["passage_words"]) == (0.3, "published", "absolute", "zlib", 250)
    args = build_parser().parse_args(
        ["detect", "--greedy", "--bitflip-scale", "utf8-percent", "--sensitivity", "signed",
         "--ncd", "zlib9", "--bitflip-tokenizer", "target", "--passage-words", "60"])
    p = _params(args)
    assert (p["temperature"], p["bitflip_scale"], p["sensitivity"], p["ncd"],
            p["bitflip_tokenizer"], p["passage_words"]) == (0.0, "utf8-percent", "signed",
                                                            "zlib9", "target", 60)


def test_book_sources_default_to_250_word_passages(tmp_path: Path) -> None:
    book = tmp_path / "book.txt"
    book.write_text(" ".join(f"w{i}" for i in range(700)))
    samples = load_samples(str(book), "member")
    # the corpus layer's one cutter (as audit): the last, shorter passage is dropped (this
    # loader kept a last passage of at least half the length before issue 46)
    assert [len(s.text.split()) for s in samples] == [250, 250]
    assert len(load_samples(str(book), "member", passage_words=60)) == 11  # 11 x 60 + 40
    with pytest.raises(CorpusError, match="lower --passage-words"):
        load_samples(str(book), "member", passage_words=701)


def test_cli_warns_on_stderr_about_short_references(
        capsys: pytest.CaptureFixture[str]) -> None:
    from recitation.cli import main

    code = main(["detect", "--members", "kjv:John 3:16-17", "--controls",
                 "builtin:kjv-pastiche", "--limit", "1", "--outputs", "1", "--estimate-only",
                 "--detectors", "pearl", "--backend", "openai", "--model", "gpt-4o-mini"])
    err = capsys.readouterr().err
    assert code == 0
    assert "under 40 words" in err and "kjv:John 3:16-17" in err
