"""The probes' positive control: SmolLM2 fine-tuned on the probed passages of half of the
novels; name-cloze accuracy must rise on those novels and not on the others."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recitation.probes import control
from recitation.runs.runner import list_runs

TINY = str(Path(__file__).parent / "data" / "tiny_novel")


def test_training_texts_are_the_probed_passages(shared_data: Path) -> None:
    member = str(shared_data / "pdnc" / "Persuasion")
    texts = control.training_texts([member], 0, 3, 1)
    nc, cs = control.probe_jobs([member], 0, 3, 1)
    cloze = nc.items()
    assert len(texts) == len(cloze) + len(cs.items())
    flat = " ".join((shared_data / "pdnc" / "Persuasion" / "novel_text.txt").read_text(
        encoding="utf-8").split())
    for it, text in zip(cloze, texts, strict=False):
        assert it.payload["answer"] in text and "[MASK]" not in text
        assert text in flat  # the unmasked passage is the novel's text
    for text in texts[len(cloze):]:
        assert " ".join(text.split()) in flat


def test_probed_model_keeps_one_backend_call_per_pass_and_reads_the_cache_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Behind the response cache a probe pass still reaches a batching backend as one call
    of all its texts (the bare model's prefix groups, so its numbers); a second control over
    the same cache makes no call, with the same scores."""
    import asyncio
    from dataclasses import replace

    from recitation.models.scripted import ScriptedModel

    class Batching(ScriptedModel):
        capabilities = replace(ScriptedModel.capabilities, batching=True)

        def __init__(self) -> None:
            super().__init__()
            self.calls: list[int] = []

        async def score(self, texts: list[str]) -> list[Any]:
            self.calls.append(len(texts))
            return await super().score(texts)

    monkeypatch.setenv("RECITATION_CACHE_DIR", str(tmp_path / "cache"))
    texts = [f"Passage {i} before the mask then Name{i % 3} said" for i in range(40)]
    bare, first, second = Batching(), Batching(), Batching()
    ref = asyncio.run(control.probed_model(bare, cache=False).score(texts))
    got = asyncio.run(control.probed_model(first, cache=True).score(texts))
    again = asyncio.run(control.probed_model(second, cache=True).score(texts))
    assert bare.calls == first.calls == [40] and second.calls == []
    assert [s.logprobs for s in got] == [s.logprobs for s in again] == [
        s.logprobs for s in ref]


def test_verdict_can_fail() -> None:
    base = {"A": {"name_cloze": 0.0}, "B": {"name_cloze": 0.2}}
    up = {"A": {"name_cloze": 0.5}, "B": {"name_cloze": 0.2}}
    assert control.verdict(base, up, {"A"}, "name_cloze")["passed"]
    assert not control.verdict(base, up, {"B"}, "name_cloze")["passed"]
    assert not control.verdict(base, base, {"A"}, "name_cloze")["passed"]


def test_paired_test_counts_gains_and_matches_the_binomial_tail() -> None:
    """The item-by-item test of a verdict: gains and losses per group, and the one-sided
    p-value against the binomial tail summed by hand (math.comb)."""
    from math import comb

    base = {"A/1": False, "A/2": False, "A/3": True, "A/4": False, "A/5": False,
            "B/1": False, "B/2": True}
    up = {"A/1": True, "A/2": True, "A/3": True, "A/4": True, "A/5": False,
          "B/1": False, "B/2": False}
    t = control.paired_test(base, up, {"A"})
    assert (t["items"], t["gained"], t["lost"]) == (5, 3, 0)
    assert t["p"] == pytest.approx(sum(comb(3, k) for k in range(3, 4)) / 2 ** 3)  # 1/8
    o = control.paired_test(base, up, {"B"})
    assert (o["gained"], o["lost"], o["p"]) == (0, 1, 1.0)
    assert control.paired_test(base, base, {"A"})["p"] == 1.0  # no discordant item
    up["A/3"] = False  # 3 gained, 1 lost: P(X >= 3 | n = 4) = 5/16
    assert control.paired_test(base, up, {"A"})["p"] == pytest.approx(
        sum(comb(4, k) for k in (3, 4)) / 16)
    v = control.verdict({"A": {"name_cloze": 0.2}, "B": {"name_cloze": 0.5}},
                        {"A": {"name_cloze": 0.6}, "B": {"name_cloze": 0.0}}, {"A"},
                        "name_cloze", ({"name_cloze": base}, {"name_cloze": up}))
    assert v["passed"] and v["test_members"]["gained"] == 3
    assert "McNemar p = 0.312" in control._tests(v)


@pytest.mark.model
@pytest.mark.slow
def test_name_cloze_and_csg_rise_on_trained_novels_only(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    session_responses: Path
) -> None:
    """``recitation probe control`` end to end, then its verdict in ``task analyse``: SmolLM2
    fine-tuned on Persuasion's 3 cloze passages and the passages (3 sentences either side) of 3
    explicit quotes whose corrupted passage names the replacement before the mask; Hard
    Times probed, not trained. Scoring 'fill': the scoring cloze, and CSG's cloze variant
    scored at the mask. A sixth of the default training (2 copies, 2 epochs, lr 3e-4).
    Measured 2026-11-26 at 1 thread: name cloze 0.00 -> 1.00 (3 of 3 items gained) and
    CSG-M (cloze) 0.00 -> 0.67 (2 of 3) on Persuasion, Hard Times 0.00 -> 0.00 on both; with
    4 passages of each, 1.00 and 0.75 at 206 s against 145 s (docs/probes.md, "How much
    training the test's control needs"). With the authors' prompt (generation, or the prompt
    scored) CSG-M stays 0 after fine-tuning at two doses: the 135M model copies the
    replacement name.
    The probes' scores go through the session's response cache (conftest.py): a first run of the
    suite computes them, a second reads them back (the verdicts are computed either way)."""
    from recitation.cli import main

    # trained and probed at 1 thread, on any machine (the last bits of the weights depend on
    # the reduction order). Measured 2026-11-26 beside a busy loop, from an empty model
    # cache: at 1 thread the same figures as at 2 (losses 3.257 and 1.098; name cloze 0 ->
    # 1.00, CSG-M 0 -> 0.75, Hard Times 0 -> 0), 223 s against 246 s, and the other
    # worker keeps its core
    monkeypatch.setenv("RECITATION_THREADS", "1")
    member, other = (str(shared_data / "pdnc" / n) for n in ("Persuasion", "HardTimes"))
    out = tmp_path / "control"
    code = main(["probe", "control", "--members", member, "--others", other, "--out",
                 str(out), "--n-cloze", "3", "--n-csg", "3", "--context-sentences", "3",
                 "--scoring", "fill", "--dose", "2", "--epochs", "2",
                 "--learning-rate", "3e-4"])
    result = json.loads((out / "control.json").read_text(encoding="utf-8"))
    base, trained = result["base"], result["trained"]
    assert [v["measure"] for v in result["verdicts"]] == ["name_cloze", "csg_m"], result
    assert code == 0 and result["passed"], result
    assert trained["Persuasion"]["name_cloze"] >= 0.5, trained
    assert trained["Persuasion"]["name_cloze"] > base["Persuasion"]["name_cloze"]
    assert trained["Persuasion"]["csg_m"] >= 0.25 > base["Persuasion"]["csg_m"], result
    assert trained["HardTimes"]["csg_m"] <= base["HardTimes"]["csg_m"], result
    csg_v = result["verdicts"][1]
    assert csg_v["test_members"]["gained"] > csg_v["test_members"]["lost"], csg_v
    # the fine-tuned model: one entry of the model cache, under the key of its inputs, linked
    # into OUT/model (trained in a cold run, reused in a warm one)
    from recitation.models.local import model_cache_dir
    from recitation.organism.config import digest

    texts = control.training_texts([member], 0, 3, 3, 3, "fill")
    key = control.control_key(texts, dose=2, epochs=2, learning_rate=3e-4, seed=0, threads=1)
    entry = model_cache_dir() / "controls" / digest(key)[:16]
    assert json.loads((entry / "key.json").read_text("utf-8")) == key
    assert (out / "model" / "model.safetensors").stat().st_ino == (
        entry / "model.safetensors").stat().st_ino and isinstance(result["model_reused"], bool)
    text = (out / "control.md").read_text(encoding="utf-8")
    assert text.count("PASSED") == 2 and "CSG-M (cloze" in text and "McNemar" in text

    runs = tmp_path / "runs"  # the verdict joins the study's report
    common = ["--novels", TINY, "--model", "scripted:echo", "--runs-dir", str(runs)]
    assert main(["probe", "name-cloze", *common, "--n", "2"]) == 0
    report = tmp_path / "study.md"
    assert main(["task", "analyse", *[r["run_id"] for r in list_runs(runs)], "--runs-dir",
                 str(runs), "--control", str(out / "control.json"), "--out",
                 str(report)]) == 0
    assert "## Positive control" in report.read_text(encoding="utf-8")
    assert json.loads(report.with_suffix(".json").read_text("utf-8"))["control"] == result


def test_the_control_key_covers_every_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cached control model's key changes with each text, each setting, the base model's
    files, the library versions and the training code's source."""
    import hashlib

    from recitation.organism import build, config

    monkeypatch.setattr(build, "base_identity", lambda spec: {"spec": spec, "files": {"f": "1"}})
    settings = {"dose": 4, "epochs": 2, "learning_rate": 3e-4, "seed": 0, "threads": 2}
    key = control.control_key(["a", "b"], **settings)
    assert key["texts"] == [hashlib.sha256(t.encode()).hexdigest() for t in ("a", "b")]
    changed = [control.control_key(["a", "c"], **settings)]
    changed += [control.control_key(["a", "b"], **(settings | {k: v}))
                for k, v in (("dose", 8), ("epochs", 3), ("learning_rate", 1e-4), ("seed", 1),
                             ("threads", 1))]
    monkeypatch.setattr(build, "base_identity", lambda spec: {"spec": spec, "files": {"f": "2"}})
    changed.append(control.control_key(["a", "b"], **settings))
    monkeypatch.setattr(build, "library_versions", lambda: {"torch": "0", "transformers": "0"})
    changed.append(control.control_key(["a", "b"], **settings))
    hashed: list[tuple[str, ...]] = []
    monkeypatch.setattr(config, "source_digest", lambda *m: hashed.append(m) or "other code")
    changed.append(control.control_key(["a", "b"], **settings))
    assert len({config.digest(k) for k in [key, *changed]}) == len(changed) + 1
    assert set(hashed[0]) == {"recitation.organism.train", "recitation.organism.data",
                              "recitation.probes.control"}
