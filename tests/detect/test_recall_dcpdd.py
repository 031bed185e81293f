"""ReCaLL, DC-PDD and n-gram Min-K%: through the local backend against a direct computation
from the real SmolLM2's logits (token ids, as MIMIR and the DC-PDD authors compute them), on
hand-made token scores, and through the detect job."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from recitation.detect.dcpdd import count_tokens, dcpdd_score
from recitation.detect.recall import build_prefix, conditional_logprobs, recall_score
from recitation.detect.whitebox import min_k_ngram, whitebox_scores
from recitation.models.base import TokenScores

CONTROLS = ["The clockmaker of Lindenfeld kept a ledger of every wheel he cut.",
            "On the third morning the river froze under the mill and the bells were silent."]
TEXTS = ["For God so loved the world, that he gave his only begotten Son.",
         "And the apprentice said unto him, Why weepest thou? the the wheel turneth not."]
CORPUS = ["In the beginning God created the heaven and the earth.",
          "And the earth was without form, and void; and darkness was upon the face of the deep.",
          "The LORD is my shepherd; I shall not want."]


def _logp(model, ids):  # type: ignore[no-untyped-def]
    import torch

    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, :-1].double()
    lp = torch.log_softmax(logits, dim=-1)
    return lp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])]


def _direct_recall(model, tok, prefix: str, text: str) -> float:  # type: ignore[no-untyped-def]
    """MIMIR: prefix and text tokenized apart, ids joined, loss on the text's tokens only."""
    p_ids = tok.encode(prefix, add_special_tokens=False)
    x_ids = tok.encode(text, add_special_tokens=False)
    ll = float(_logp(model, x_ids).mean())
    ll_cond = float(_logp(model, p_ids + x_ids)[-len(x_ids):].mean())
    return ll_cond / ll


def _direct_dcpdd(model, tok, text: str, a: float) -> float:  # type: ignore[no-untyped-def]
    """The authors' com_det_sco.py: ids counted in the corpus, first occurrences, cap a."""
    counts: dict[int, int] = {}
    for doc in CORPUS:
        for i in tok.encode(doc, add_special_tokens=False):
            counts[i] = counts.get(i, 0) + 1
    total, vocab = sum(counts.values()), len(tok)
    ids = tok.encode(text, add_special_tokens=False)
    probs = _logp(model, ids).exp().tolist()
    seen: set[int] = set()
    alphas = []
    for i, p in zip(ids[1:], probs, strict=True):
        if i not in seen:
            seen.add(i)
            f = (1 + counts.get(i, 0)) / (total + vocab)
            alphas.append(min(p * math.log(1 / f), a))
    return sum(alphas) / len(alphas)


@pytest.mark.model
def test_recall_matches_a_direct_computation_from_logits(local_model) -> None:  # type: ignore[no-untyped-def]
    loaded = local_model.load()
    prefix = build_prefix(CONTROLS, 2)
    plain = local_model.score_sync(TEXTS)
    cond = local_model.score_sync([prefix + t for t in TEXTS])  # batched, left-padded
    for text, p, c in zip(TEXTS, plain, cond, strict=True):
        want = _direct_recall(loaded.model, loaded.tokenizer, prefix, text)
        assert recall_score(p, c) == pytest.approx(want, rel=1e-4), text
        assert want > 0 and want != pytest.approx(1.0, abs=1e-3)  # the prefix changes LL


@pytest.mark.model
@pytest.mark.parametrize("a", [0.01, 10.0])  # the authors' cap, and one that never binds
def test_dcpdd_matches_a_direct_computation_from_logits(local_model, a: float) -> None:  # type: ignore[no-untyped-def]
    from recitation.models.tokenizer import HFTokenizer

    loaded = local_model.load()
    tok = HFTokenizer(loaded.tokenizer)
    freqs = count_tokens(CORPUS, tok.tokens, tok.vocab_size, "test")
    for text, ts in zip(TEXTS, local_model.score_sync(TEXTS), strict=True):
        want = _direct_dcpdd(loaded.model, loaded.tokenizer, text, a)
        assert dcpdd_score(ts, freqs, a) == pytest.approx(want, rel=1e-4), text
    if a == 10.0:  # the uncapped score depends on the corpus: a token it counts weighs less
        ts = local_model.score_sync([TEXTS[0]])[0]
        empty = count_tokens([], tok.tokens, tok.vocab_size)
        assert dcpdd_score(ts, empty, a) > dcpdd_score(ts, freqs, a)


def _ts(tokens: list[str], lps: list[float]) -> TokenScores:
    assert len(lps) == len(tokens) - 1
    return TokenScores(tuple(tokens), tuple(lps))


def test_recall_by_hand() -> None:
    plain = _ts(["a", "b", "c"], [-1.0, -3.0])  # LL(x) = -2
    cond = _ts(["p", "q", "a", "b", "c"], [-9.0, -1.0, -2.0, -6.0])  # x's: -1, -2, -6 -> -3
    assert conditional_logprobs(plain, cond) == (-1.0, -2.0, -6.0)
    assert recall_score(plain, cond) == pytest.approx(-3.0 / -2.0)
    # the sample's first token merged with the prefix's end: the rest are scored
    merged = _ts(["p", "qa", "b", "c"], [-9.0, -4.0, -8.0])
    assert recall_score(plain, merged) == pytest.approx(-6.0 / -2.0)
    # a BOS both share: the sample's tokens after it end the conditioned text
    bos = _ts(["<s>", "p", "a", "b"], [-1.0, -2.0, -4.0])
    assert conditional_logprobs(_ts(["<s>", "a", "b"], [-1.0, -1.0]), bos) == (-2.0, -4.0)
    with pytest.raises(ValueError, match="boundary"):
        recall_score(plain, _ts(["p", "a", "x", "c"], [-1.0, -1.0, -1.0]))


def test_recall_prefix_is_the_first_controls_concatenated() -> None:
    assert build_prefix(["A. ", "B. ", "C. "], 2) == "A. B. "
    with pytest.raises(ValueError, match="2 control"):
        build_prefix(["A"], 2)


def test_dcpdd_by_hand_first_occurrences_laplace_and_cap() -> None:
    freqs = count_tokens(["x x y"], str.split, vocab_size=7)  # N = 3, |V| = 7
    assert freqs.frequency("x") == pytest.approx(3 / 10)
    assert freqs.frequency("z") == pytest.approx(1 / 10)
    ts = _ts(["s", "x", "z", "x"], [math.log(0.5), math.log(0.2), math.log(0.9)])
    # x (first time): 0.5 * log(10/3); z: 0.2 * log(10); the second x is skipped
    want = (0.5 * math.log(10 / 3) + 0.2 * math.log(10)) / 2
    assert dcpdd_score(ts, freqs, a=10.0) == pytest.approx(want)
    # a = 0.5 caps x (0.60 -> 0.5) and leaves z (0.46)
    assert dcpdd_score(ts, freqs, a=0.5) == pytest.approx((0.5 + 0.2 * math.log(10)) / 2)
    assert dcpdd_score(ts, freqs) == pytest.approx(0.01)  # both capped at a = 0.01


def test_min_k_over_ngram_windows_by_hand() -> None:
    lps = [-1.0, -5.0, -1.0, -1.0, -9.0]  # windows of 2: -3, -3, -1, -5
    assert min_k_ngram(lps, 25, 2) == pytest.approx(-5.0)
    assert min_k_ngram(lps, 50, 2) == pytest.approx(-4.0)
    assert min_k_ngram(lps[:2], 50, 3) == pytest.approx(-3.0)  # fewer tokens: one window
    assert min_k_ngram(lps, 20, 1) == pytest.approx(-9.0)  # n = 1: plain Min-K%
    got = {d.detector: d for d in whitebox_scores("s", "t", _ts(list("abcdef"), lps), ngram=2)}
    assert got["min_k_20_ngram2"].score == pytest.approx(-5.0)
    assert got["min_k_20_ngram2"].higher_means_member
    assert got["min_k_20"].score == pytest.approx(-9.0)  # unchanged beside it
    assert not any("ngram" in n for n in (d.detector for d in whitebox_scores(
        "s", "t", _ts(list("abcdef"), lps))))


def _jsonl(path: Path, texts: list[str]) -> str:
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n"
                            for i, t in enumerate(texts)))
    return str(path)


@pytest.mark.model
async def test_detect_job_scores_recall_and_dcpdd(local_model, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from recitation.runs.jobs import make_job

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join(CORPUS))
    controls = CONTROLS + ["A lantern hung in the window of the baker's widow all winter."]
    job = make_job("detect", {"members": [_jsonl(tmp_path / "m.jsonl", TEXTS)],
                     "controls": [_jsonl(tmp_path / "c.jsonl", controls)],
                     "detectors": ["recall", "dcpdd"], "recall_shots": 2,
                     "dcpdd_corpus": str(corpus), "dcpdd_a": 10.0}, 0)
    recs = await job.run_items(job.items(), local_model)
    by_id = {r["sample"]["id"]: r for r in recs}
    names = {sid: {s["detector"]: s["score"] for s in r["scores"]} for sid, r in by_id.items()}
    assert [sid for sid, r in by_id.items() if r.get("recall_prefix")] == ["c:0", "c:1"]
    assert "recall" not in names["c:0"] and "recall" in names["c:2"]
    loaded = local_model.load()
    prefix = controls[0] + controls[1]
    assert names["m:0"]["recall"] == pytest.approx(
        _direct_recall(loaded.model, loaded.tokenizer, prefix, TEXTS[0]), rel=1e-4)
    assert names["m:1"]["dcpdd"] == pytest.approx(
        _direct_dcpdd(loaded.model, loaded.tokenizer, TEXTS[1], 10.0), rel=1e-4)
    assert by_id["m:0"]["dcpdd"]["corpus"] == str(corpus)
    assert not any(s.startswith(("loss", "min_k")) for n in names.values() for s in n)


def test_cli_passes_the_new_detectors_and_options() -> None:
    from recitation.cli import build_parser
    from recitation.detect.cli import build_config

    args = build_parser().parse_args(
        ["detect", "--detectors", "recall", "dcpdd", "--recall-shots", "1",
         "--dcpdd-corpus", "c.txt", "--dcpdd-a", "0.5", "--min-k-ngram", "4"])
    p = build_config(args).params
    assert (p["detectors"], p["recall_shots"], p["dcpdd_corpus"], p["dcpdd_a"],
            p["min_k_ngram"]) == (["recall", "dcpdd"], 1, "c.txt", 0.5, 4)
    default = build_config(build_parser().parse_args(["detect"])).params
    assert default["detectors"] == ["pearl", "whitebox"] and default["min_k_ngram"] == 1


def test_dcpdd_reference_counted_once_per_tokenizer_and_corpus(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference corpus is counted once per (corpus contents, tokenizer): a second detect
    job of a model that tokenizes alike (a fine-tune) reuses the counts, and so does another
    process (read from the cache directory); a tokenizer with another fingerprint, or an
    edited corpus file, is counted again; counts read back are those of a fresh count."""
    from recitation.detect import dcpdd

    class Tok:
        vocab_size = 100

        def __init__(self, fp: str) -> None:
            self.fp, self.calls = fp, 0

        def tokens(self, text: str) -> list[str]:
            self.calls += 1
            return text.split()

        def fingerprint(self) -> str:
            return self.fp

    monkeypatch.setenv("RECITATION_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(dcpdd, "_COUNTED", {})
    corpus = tmp_path / "ref.txt"
    corpus.write_text("a b a\n\nc a", encoding="utf-8")
    first, same, other = Tok("x"), Tok("x"), Tok("y")
    counted = dcpdd.reference_counts(str(corpus), first)
    assert first.calls == 2 and dcpdd.reference_counts(str(corpus), same) is counted
    assert same.calls == 0  # reused in this process
    fresh = count_tokens(["a b a", "c a"], str.split, 100)
    monkeypatch.setattr(dcpdd, "_COUNTED", {})  # another process: read from the disk
    again = Tok("x")
    read = dcpdd.reference_counts(str(corpus), again)
    assert again.calls == 0 and (read.counts, read.total) == (fresh.counts, fresh.total)
    dcpdd.reference_counts(str(corpus), other)
    assert other.calls == 2  # another tokenizer: counted again
    corpus.write_text("a b a\n\nc a\n\nd", encoding="utf-8")  # edited: counted again
    edited = Tok("x")
    assert dcpdd.reference_counts(str(corpus), edited).total == 6 and edited.calls == 3
