"""The probes' positive control: SmolLM2 fine-tuned on the probed passages of half of the
novels; name-cloze accuracy must rise on those novels and not on the others."""

from __future__ import annotations

from pathlib import Path

import pytest

from recitation.probes import control


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


def test_verdict_can_fail() -> None:
    base = {"A": {"name_cloze": 0.0}, "B": {"name_cloze": 0.2}}
    up = {"A": {"name_cloze": 0.5}, "B": {"name_cloze": 0.2}}
    assert control.verdict(base, up, {"A"}, "name_cloze")["passed"]
    assert not control.verdict(base, up, {"B"}, "name_cloze")["passed"]
    assert not control.verdict(base, base, {"A"}, "name_cloze")["passed"]


@pytest.mark.model
@pytest.mark.slow
def test_name_cloze_rises_on_trained_novels_only(shared_data: Path, tmp_path: Path) -> None:
    """With the scoring cloze (the most likely of the novel's names): measured 2026-11-24,
    Persuasion 0.00 -> 0.75 after fine-tuning on its 4 cloze passages, Hard Times 0.25 ->
    0.25 (4.7 min, 3.1 GB beside a CI run). The paper's generation cloze gives 0 everywhere
    on this 135M model, before and after (docs/probes.md)."""
    from recitation.models.local import LocalModel

    member, other = (str(shared_data / "pdnc" / n) for n in ("Persuasion", "HardTimes"))
    texts = control.training_texts([member], 0, 4, 0)  # the cloze passages only: cheap
    assert len(texts) == 4
    out = control.train_control(texts, tmp_path / "control", dose=8, epochs=3)
    base = control.measure(LocalModel("smollm2"), [member, other], 0, 4, 0, scoring="logprob")
    trained = control.measure(LocalModel(str(out)), [member, other], 0, 4, 0,
                              scoring="logprob")
    v = control.verdict(base, trained, {"Persuasion"}, "name_cloze")
    assert v["passed"], (v, base, trained)
    assert trained["Persuasion"]["name_cloze"] >= 0.5, trained
