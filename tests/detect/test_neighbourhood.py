"""The neighbourhood comparison attack (Mattern et al. 2023; MIMIR's score): hand-worked
values of its definition, the offline neighbours, and the detect job on the real SmolLM2
against a direct computation from the model's logits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recitation.detect.neighbour import neighbourhood_score, neighbours
from recitation.models.base import TokenScores

SYN = {"big": ["large", "great"], "dogs": ["hounds"], "run": ["sprint", "race", "dash", "jog"]}


def _ts(logprobs: list[float]) -> TokenScores:
    return TokenScores(tokens=tuple("t" * (len(logprobs) + 1)), logprobs=tuple(logprobs))


def test_score_by_hand() -> None:
    """NLL(x) = (1 + 2 + 3) / 3 = 2; the neighbours' NLLs 2 and (3 + 4 + 5) / 3 = 4, mean 3;
    the score 2 - 3 = -1 (lower than its neighbours: member-like)."""
    s = neighbourhood_score(_ts([-1, -2, -3]), [_ts([-2, -2]), _ts([-3, -4, -5])])
    assert s == pytest.approx(-1.0)
    assert neighbourhood_score(_ts([-4.0]), [_ts([-1.0])]) == pytest.approx(3.0)
    with pytest.raises(ValueError, match="no neighbours"):
        neighbourhood_score(_ts([-1.0]), [])


def test_neighbours_change_one_word_first_synonyms_first() -> None:
    text = "Big dogs run fast at the fair."
    got = neighbours(text, 100, 0, lambda w: SYN.get(w, []))
    # 3 words with synonyms (fast has none; "at", "the" are function words): first synonyms
    # (large, hounds, sprint), then second (great, race), then third (dash); jog is 4th
    assert len(got) == 6 and len(set(got)) == 6
    firsts = {"Large dogs run fast at the fair.", "Big hounds run fast at the fair.",
              "Big dogs sprint fast at the fair."}
    assert set(got[:3]) == firsts
    assert set(got[3:5]) == {"Great dogs run fast at the fair.",
                             "Big dogs race fast at the fair."}
    assert got[5] == "Big dogs dash fast at the fair."
    assert neighbours(text, 2, 0, lambda w: SYN.get(w, [])) == got[:2]
    # the seed orders positions within a rank only
    other = [neighbours(text, 3, s, lambda w: SYN.get(w, [])) for s in range(8)]
    assert all(set(o) == firsts for o in other) and len({tuple(o) for o in other}) > 1
    assert neighbours("the of and", 5, 0, lambda w: SYN.get(w, [])) == []
    with pytest.raises(ValueError, match="at least one"):
        neighbours(text, 0, 0)


def test_neighbours_from_wordnet_differ_in_one_word() -> None:
    text = "The old farmer watched the quiet river from his porch every evening."
    got = neighbours(text, 25, 3)
    assert 10 <= len(got) <= 25 and text not in got
    for n in got:
        diff = [(a, b) for a, b in zip(text.split(), n.split(), strict=False) if a != b]
        assert len(diff) == 1 or len(n.split()) != len(text.split())


def _direct_nll(model, tok, text: str) -> float:  # type: ignore[no-untyped-def]
    import torch

    ids = tok.encode(text, add_special_tokens=False)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, :-1].double()
    lp = torch.log_softmax(logits, dim=-1)[torch.arange(len(ids) - 1), torch.tensor(ids[1:])]
    return float(-lp.mean())


@pytest.mark.model
async def test_detect_job_scores_neighbourhood(local_model, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from recitation.runs.jobs import make_job

    texts = ["For God so loved the world, that he gave his only begotten Son.",
             "The clockmaker of Lindenfeld kept a ledger of every wheel he cut."]

    def jsonl(path: Path, rows: list[str]) -> str:
        path.write_text("".join(json.dumps({"text": t}) + "\n" for t in rows))
        return str(path)

    job = make_job("detect", {"members": [jsonl(tmp_path / "m.jsonl", texts[:1])],
                              "controls": [jsonl(tmp_path / "c.jsonl", texts[1:])],
                              "detectors": ["neighbourhood"], "neighbours": 4}, 7)
    recs = await job.run_items(job.items(), local_model)
    loaded = local_model.load()
    for r, text in zip(recs, texts, strict=True):
        (score,) = [s for s in r["scores"] if s["detector"] == "neighbourhood"]
        near = neighbours(text, 4, 7)
        assert r["neighbours"] == len(near) == 4 and not score["higher_means_member"]
        want = _direct_nll(loaded.model, loaded.tokenizer, text) - sum(
            _direct_nll(loaded.model, loaded.tokenizer, n) for n in near) / 4
        assert score["score"] == pytest.approx(want, abs=1e-4)


def test_scoring_texts_are_the_texts_and_every_familys_companions(tmp_path: Path) -> None:
    """What `detect --ray` scores into the store first: the samples, their lower-cased forms
    (white-box) and their neighbours, each once."""
    from recitation.runs.jobs import make_job

    texts = ["The Old Farmer Watched the River.", "The Old Farmer Watched the River."]
    (tmp_path / "m.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    job = make_job("detect", {"members": [str(tmp_path / "m.jsonl")], "controls": [],
                              "detectors": ["whitebox", "neighbourhood"], "neighbours": 3}, 0)
    got = job.scoring_texts()  # type: ignore[attr-defined]
    near = neighbours(texts[0], 3, 0)
    assert got == [texts[0], texts[0].lower(), *near]
    pearl_only = make_job("detect", {"members": [str(tmp_path / "m.jsonl")], "controls": [],
                                     "detectors": ["pearl"]}, 0)
    assert pearl_only.scoring_texts() == []  # type: ignore[attr-defined]
