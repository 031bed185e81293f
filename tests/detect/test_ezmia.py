"""EZ-MIA (arXiv:2601.12104; the authors' mia/ez_score.py): hand-worked values of the
authors' kernel (first position dropped, at least 2 error-zone tokens, the 0.0 fallbacks),
and the detect job on the quick organism with its base model as reference, against a direct
computation from both models' logits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recitation.detect.ezmia import error_zone, ez_score, ezmia_from_scores
from recitation.models.base import TokenScores


def test_member_like_example_by_hand() -> None:
    """Positions 2, 3, 5 are wrong (position 0 is dropped, whatever it is): deltas +1.2,
    -0.4, +0.8; EZ = 2.0 / 0.4 = 5. Without the drop position 0 (delta -4.0) joins: 2 / 4.4."""
    tgt = [-5.0, -0.2, -1.5, -3.0, -0.1, -2.0]
    ref = [-1.0, -0.9, -2.7, -2.6, -0.3, -2.8]
    wrong = [True, False, True, True, False, True]
    assert ez_score(tgt, ref, wrong) == (pytest.approx(5.0, abs=1e-9), None)
    assert ez_score(tgt, ref, wrong, ignore_first=False)[0] == pytest.approx(2.0 / 4.4)


def test_non_member_like_example_by_hand() -> None:
    """Every position wrong; deltas after the first -0.5, +0.2, -0.1, -1.0, -0.3:
    EZ = 0.2 / 1.9."""
    tgt = [-2.0, -1.0, -2.2, -0.4, -3.1, -1.9]
    ref = [-2.0, -0.5, -2.4, -0.3, -2.1, -1.6]
    v, why = ez_score(tgt, ref, [True] * 6)
    assert v == pytest.approx(0.2 / 1.9, abs=1e-9) and why is None


def test_fallbacks_give_zero_and_saturate_gives_the_top() -> None:
    """The authors' 0.0 for the texts a fine-tune knows best; with ``saturate`` (ours) the
    ratio stands (gains 3.0 over 1e-12) and a text with one wrong token scores SATURATED."""
    from recitation.detect.ezmia import SATURATED

    one_wrong = [False, False, True, False, False, False]
    a = ([-1, -0.1, -2, -0.2, -0.3, -0.1], [-1, -0.5, -3, -0.4, -0.2, -0.2], one_wrong)
    assert ez_score(*a) == (0.0, "fewer than 2 error-zone tokens")
    assert ez_score(*a, saturate=True) == (SATURATED, "fewer than 2 error-zone tokens")
    all_gain = [False, True, True, False, True, False]
    b = ([-1, -1, -2, -0.2, -1.5, -0.1], [-1, -2, -3, -0.4, -2.5, -0.2], all_gain)
    v, why = ez_score(*b)
    assert v == 0.0 and why is not None and "less likely" in why
    v, why = ez_score(*b, saturate=True)
    assert v == pytest.approx(3.0 / 1e-12) and why is not None
    even = ([-1.0] * 4, [-1.0] * 4, [True] * 4)  # the base model against itself: 0 either way
    assert ez_score(*even)[0] == ez_score(*even, saturate=True)[0] == 0.0
    tgt = [-5.0, -0.2, -1.5, -3.0, -0.1, -2.0]  # a text with gains and losses: unchanged
    ref = [-1.0, -0.9, -2.7, -2.6, -0.3, -2.8]
    wrong = [True, False, True, True, False, True]
    assert ez_score(tgt, ref, wrong, saturate=True) == ez_score(tgt, ref, wrong)


def test_truncation_to_max_tokens_and_error_zone_from_rank_or_top() -> None:
    """Example E of the authors' kernel with padding: positions past the mask (here past
    max_tokens = 5 tokens, 4 positions) are out; E = {1, 2, 3}: -1.0, +1.5, -0.1 -> 1.5/1.1."""
    toks = tuple("abcdefg")
    target = TokenScores(tokens=toks, logprobs=(-1, -2, -1, -0.5, -9, -9),
                         rank=(1, 3, 2, 7, 1, 1))
    reference = TokenScores(tokens=toks, logprobs=(-1, -1, -2.5, -0.4, -1, -1))
    v, why = ezmia_from_scores(target, reference, max_tokens=5)
    assert v == pytest.approx(1.5 / 1.1, abs=1e-9) and why is None
    by_top = TokenScores(tokens=toks, logprobs=(-1, -2, -1, -0.5, -9, -9),
                         top_logprob=(-1, -0.5, -0.2, -0.1, -9, -9))
    assert error_zone(by_top) == [False, True, True, True, False, False]
    with pytest.raises(ValueError, match="likeliest token"):
        error_zone(reference)
    with pytest.raises(ValueError, match="tokenizes the text differently"):
        ezmia_from_scores(target, TokenScores(tokens=tuple("abcdefh"),
                                              logprobs=reference.logprobs), 5)


def _direct(model: Any, ids: list[int]) -> tuple[Any, Any]:
    """Gold log-probabilities and the argmax at each position, as the authors' models.py."""
    import torch

    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, :-1].double()
    lp = torch.log_softmax(logits, dim=-1)
    gold = torch.tensor(ids[1:])
    return lp[torch.arange(len(ids) - 1), gold], lp.argmax(dim=-1) != gold


def _authors_kernel(tgt: Any, ref: Any, wrong: Any) -> float:
    """mia/ez_score.py, written again over tensors: mask[0] = 0, error mask, sums, 1e-12."""
    wrong = wrong.clone()
    wrong[0] = False
    if int(wrong.sum()) < 2:
        return 0.0
    d = (tgt - ref)[wrong]
    neg = float(d[d < 0].abs().sum())
    return 0.0 if neg == 0 else float(d[d > 0].sum()) / (neg + 1e-12)


@pytest.mark.model
async def test_detect_job_on_the_organism_against_both_models_logits(  # type: ignore[no-untyped-def]
        quick, tmp_path: Path) -> None:
    from recitation.models.local import LocalModel
    from recitation.organism.data import load_split
    from recitation.runs.jobs import make_job

    passages = load_split(quick.directory / "split.json")
    members = [p.text for p in passages if p.dose > 0][:2]
    others = [p.text for p in passages if p.dose == 0][:2]

    def jsonl(path: Path, rows: list[str]) -> str:
        path.write_text("".join(json.dumps({"text": t}) + "\n" for t in rows))
        return str(path)

    job = make_job("detect", {"members": [jsonl(tmp_path / "m.jsonl", members)],
                              "controls": [jsonl(tmp_path / "c.jsonl", others)],
                              "detectors": ["ezmia"], "reference_model": {
                                  "backend": "local", "model": "organism:quick:epoch0"}}, 0)
    target = LocalModel("organism:quick:epoch2")
    recs = await job.run_items(job.items(), target)
    t, r = target.load(), LocalModel("organism:quick:epoch0").load()
    for rec, text in zip(recs, members + others, strict=True):
        assert not rec["errors"]
        (score,) = [s for s in rec["scores"] if s["detector"] == "ezmia"]
        ids = t.tokenizer.encode(text)[:128]
        tgt, wrong = _direct(t.model, ids)
        ref, _ = _direct(r.model, ids)
        assert score["score"] == pytest.approx(_authors_kernel(tgt, ref, wrong), abs=1e-4)
        assert score["higher_means_member"]
    # with saturate (ours) the members, whatever their fallback, score above the non-members
    job = make_job("detect", {"members": [jsonl(tmp_path / "m.jsonl", members)],
                              "controls": [jsonl(tmp_path / "c.jsonl", others)],
                              "detectors": ["ezmia"], "ezmia_saturate": True,
                              "reference_model": {"backend": "local",
                                                  "model": "organism:quick:epoch0"}}, 0)
    got = [s["score"] for r in await job.run_items(job.items(), target) for s in r["scores"]]
    assert min(got[:2]) > max(got[2:])
