"""The token-signal store: one scoring pass per (model, text) into Parquet shards; detectors
read their scores from it, equal to scoring through the model, and a second run with other
settings makes no model call."""

from __future__ import annotations

import asyncio
import json
import math
import struct
from pathlib import Path

import pytest

from recitation.models.base import Model, TokenScores, Usage
from recitation.models.scripted import ScriptedModel
from recitation.signals.compute import score_through
from recitation.signals.store import SignalStore, text_key

pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402


def f32(x: float) -> float:
    """``x`` rounded to float32, as a backend's numbers are."""
    return float(struct.unpack("f", struct.pack("f", x))[0])


def scores_for(text: str) -> TokenScores:
    toks = tuple(text.split())
    n = len(toks) - 1
    return TokenScores(tokens=toks, logprobs=tuple(f32(-0.1 * (i + 1) - 1 / 3) for i in range(n)),
                       mean_logprob=tuple(f32(-2.0 - i / 7) for i in range(n)),
                       std_logprob=tuple(f32(1.0 + i / 9) for i in range(n)),
                       top_logprob=tuple(f32(-0.01 * i) for i in range(n)),
                       token_ids=tuple(range(10, 10 + len(toks))),
                       rank=tuple(1 + i for i in range(n)), usage=Usage(len(toks), 0))


class Counting(ScriptedModel):
    """Scores by :func:`scores_for`, counting the texts it is asked to score."""

    def __init__(self) -> None:
        super().__init__(name="counting")
        self.scored: list[str] = []

    async def score(self, texts: list[str]) -> list[TokenScores]:
        self.scored += texts
        return [scores_for(t) for t in texts]


TEXTS = [f"text number {k} of the set" for k in range(7)]


def test_a_shard_holds_every_signal_exactly_and_pyarrow_reads_it(tmp_path: Path) -> None:
    store = SignalStore(tmp_path, {"backend": "x", "model": "m"})
    path = store.write(TEXTS[:2], [scores_for(t) for t in TEXTS[:2]])
    table = pq.read_table(path)  # the file, read by pyarrow alone
    assert table.column("text_sha256").to_pylist() == [text_key(t) for t in TEXTS[:2]]
    row = table.to_pylist()[1]
    want = scores_for(TEXTS[1])
    assert tuple(row["logprob"]) == want.logprobs  # float32 values kept exactly
    assert tuple(row["entropy"]) == tuple(-m for m in want.mean_logprob or ())
    assert tuple(row["rank"]) == want.rank and tuple(row["token_ids"]) == want.token_ids
    assert str(table.schema.field("logprob").type) == "list<element: float>"
    assert json.loads((path.parent / "model.json").read_text()) == {"backend": "x", "model": "m"}
    back = SignalStore(tmp_path, {"backend": "x", "model": "m"}).read([TEXTS[1], TEXTS[0]])
    for got, text in zip(back, [TEXTS[1], TEXTS[0]], strict=True):
        w = scores_for(text)
        assert (got.tokens, got.logprobs, got.mean_logprob, got.std_logprob,
                got.top_logprob, got.token_ids, got.rank) == (
            w.tokens, w.logprobs, w.mean_logprob, w.std_logprob, w.top_logprob, w.token_ids,
            w.rank)
    assert not list(path.parent.glob("*.tmp"))


def test_columns_a_backend_cannot_give_are_null(tmp_path: Path) -> None:
    store = SignalStore(tmp_path, {"backend": "openai", "model": "m"})
    api = TokenScores(tokens=("a", "b"), logprobs=(-1.5,), usage=Usage(2, 0))
    row = pq.read_table(store.write(["a b"], [api])).to_pylist()[0]
    assert row["mean_logprob"] is None and row["entropy"] is None and row["rank"] is None
    (back,) = store.read(["a b"])
    assert back.logprobs == (-1.5,) and back.mean_logprob is None


def test_each_text_is_scored_once_in_shards_and_a_killed_job_resumes_by_shard(
        tmp_path: Path) -> None:
    model = Counting()
    store = SignalStore(tmp_path, model.answer_identity())

    class Killed(Exception):
        pass

    async def dies_at_third(texts: list[str]) -> list[TokenScores]:
        if len(model.scored) >= 6:
            raise Killed
        return await Counting.score(model, texts)

    model.score = dies_at_third  # type: ignore[method-assign]
    with pytest.raises(Killed):
        asyncio.run(score_through(store, model, TEXTS, shard=3))
    assert len(list(store.folder.glob("*.parquet"))) == 2  # two whole shards, nothing else
    del model.score
    fresh = SignalStore(tmp_path, model.answer_identity())  # a new process: reads the keys
    got, done = asyncio.run(score_through(fresh, model, TEXTS + TEXTS[:2], shard=3))
    assert model.scored[6:] == [TEXTS[6]] and done.scored == 1 and done.shards_written == 1
    assert [s.logprobs for s in got] == [scores_for(t).logprobs for t in TEXTS + TEXTS[:2]]
    again, done = asyncio.run(score_through(fresh, model, TEXTS))
    assert done.scored == 0 and len(model.scored) == 7
    filled, done = asyncio.run(score_through(fresh, model, TEXTS, read=False))
    assert filled == [] and done.texts == len(TEXTS) and done.scored == 0  # filling only


def test_another_model_or_answer_code_has_its_own_signals(tmp_path: Path) -> None:
    a, b = Counting(), Counting()
    b.name = "other"
    for m in (a, b):
        asyncio.run(score_through(SignalStore(tmp_path, m.answer_identity()), m, TEXTS[:2]))
    assert len(b.scored) == 2 and len([p for p in tmp_path.iterdir() if p.is_dir()]) == 2


@pytest.mark.model
async def test_detect_reads_the_store_equal_to_scoring_and_a_rerun_calls_no_model(
        local_model: Model, tmp_path: Path) -> None:
    """The white-box detectors on the embedded model: scores through a signal store equal
    scores through the model; a run with other settings reads every text from the store."""
    from recitation.runs.jobs import make_job

    members = tmp_path / "m.jsonl"
    controls = tmp_path / "c.jsonl"
    for path, prefix in ((members, "In the beginning"), (controls, "The old lighthouse")):
        path.write_text("".join(json.dumps({"id": f"{prefix[:3]}{k}", "text": f"{prefix} "
                                            f"of day {k}, the sea was calm and the birds were "
                                            "quiet over the water."}) + "\n" for k in range(4)))
    params = {"members": [str(members)], "controls": [str(controls)],
              "detectors": ["whitebox", "recall"], "recall_shots": 1}
    plain = make_job("detect", params, 0)
    want = await plain.run_items(plain.items(), local_model)
    stored = make_job("detect", params | {"signals": str(tmp_path / "sig")}, 0)
    got = await stored.run_items(stored.items(), local_model)

    def names(recs: list[dict[str, object]]) -> dict[tuple[str, str], float]:
        return {(r["sample"]["id"], s["detector"]): s["score"]  # type: ignore[index]
                for r in recs for s in r["scores"]}  # type: ignore[attr-defined]

    a, b = names(want), names(got)
    assert a.keys() == b.keys() and len(a) >= 8 * 10
    assert max(abs(a[k] - b[k]) for k in a if math.isfinite(a[k])) < 1e-6
    calls = 0
    real = local_model.score

    async def counted(texts: list[str]) -> list[TokenScores]:
        nonlocal calls
        calls += 1
        return await real(texts)

    local_model.score = counted  # type: ignore[method-assign]
    try:
        other = make_job("detect", params | {"signals": str(tmp_path / "sig"),
                                             "min_k_ngram": 3}, 0)
        again = names(await other.run_items(other.items(), local_model))
    finally:
        del local_model.score
    assert calls == 0 and any(d.startswith("min_k_3gram") or "gram" in d for _, d in again)
    # the integrity check the first run made is kept beside the signals and read back
    (check,) = (tmp_path / "sig").glob("*/logprob_check.json")
    assert json.loads(check.read_text())["report"]["model"] == local_model.name


def test_the_command_scores_once_then_finds_everything_in_the_store(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from recitation.cli import main

    src = tmp_path / "t.jsonl"
    src.write_text("".join(json.dumps({"id": str(k), "text": t}) + "\n"
                           for k, t in enumerate(TEXTS)))
    args = ["signals", str(src), "--model", "scripted:x", "--store", str(tmp_path / "s"),
            "--shard", "4"]
    assert main(args) == 0
    assert "7 texts: 7 scored in 2 shard(s), 0 already in the store" in capsys.readouterr().out
    assert main(args) == 0
    assert "7 texts: 0 scored in 0 shard(s), 7 already in the store" in capsys.readouterr().out
    (folder,) = [p for p in (tmp_path / "s").iterdir() if p.is_dir()]
    assert json.loads((folder / "model.json").read_text())["backend"] == "scripted"
    assert sum(pq.read_table(p).num_rows for p in folder.glob("*.parquet")) == 7


def test_an_audit_reads_and_fills_the_store(tmp_path: Path) -> None:
    """`recitation audit --signals DIR`: the detectors' scores go into the store once; a
    second audit of the same text reads them all (its detect run calls no model)."""
    from recitation.audit.run import AuditSettings, create_audit, execute_audit
    from recitation.runs.audits import load_manifest
    from recitation.runs.store import RunStore

    def lines(name: str, n: int) -> Path:
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps({"id": f"{name}{i}", "text": " ".join(
            f"{name}{i}w{j}" for j in range(30))}) + "\n" for i in range(n)))
        return path

    text, ctl = lines("t", 6), lines("c", 9)
    settings = AuditSettings(passage_words=30, pearl=False, cache=False, n_bootstrap=0,
                             recap_passages=0, signals=str(tmp_path / "sig"))
    calls = []
    for k in range(2):
        folder = create_audit([str(text)], ["scripted:echo"], [str(ctl)], settings,
                              runs_dir=tmp_path / f"runs{k}")
        execute_audit(folder, say=lambda _: None)
        detect = load_manifest(folder)["models"][0]["runs"]["detect"]
        calls.append(RunStore(folder / "runs" / detect).call_totals()["calls"])
    assert calls[0] > 0 and calls[1] == 0
    (model_dir,) = [p for p in (tmp_path / "sig").iterdir() if p.is_dir()]
    rows = sum(pq.read_table(p).num_rows for p in model_dir.glob("*.parquet"))
    assert rows >= 6 + 9  # every passage and control (and ReCaLL's conditioned texts)
