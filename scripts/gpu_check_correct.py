"""The GPU check's correctness phase: the white-box signals of our scoring code on the device
against a reference, token by token, and the detector scores computed from them by
``recitation.detect.whitebox`` (the functions the detect job runs).

On CUDA the reference is the CPU in float32 and the candidate the GPU in float32, both
through ``LocalModel.score_sync`` (batched as each device batches); bfloat16 on the GPU is
measured against the same reference (reported, not judged). Without CUDA (``--device cpu``)
the reference is a float64 copy of the weights scored one text at a time (no padding) by the
same ``_decode.score_texts`` (float64 logits; its vocabulary statistics are taken in float32,
as ``position_stats`` takes them), and the candidate float32 on the CPU, batched with left
padding: the check then says that batching, padding and float32 leave every signal within
the tolerance, not that two devices agree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

TOLERANCE = 1e-4
"""Largest allowed difference in float32: absolute per token (log-probabilities and their
statistics), relative to ``max(1, |score|)`` per detector score (Min-K%++ and Gap-K% divide
by sigma: a score of -50 carries the per-token error times 50)."""
FIELDS = ("logprobs", "mean_logprob", "std_logprob", "top_logprob")
"""Per-token signals: log p (LOSS, zlib, Min-K%), the vocabulary mean and spread of log p
(Min-K%++; the spread also divides Gap-K%'s gaps) and the likeliest token's log p (Gap-K%)."""


def local_scores(model_dir: Path, device: str, dtype: str,
                 texts: Sequence[str]) -> list[Any]:
    """``LocalModel.score_sync`` of ``texts`` on ``device`` in ``dtype``."""
    from recitation.models.local import LocalModel

    return LocalModel(str(model_dir), device=device, dtype=dtype).score_sync(list(texts))


def float64_scores(model_dir: Path, texts: Sequence[str]) -> list[Any]:
    """Our ``score_texts`` on a float64 copy on the CPU, one text at a time."""
    import torch
    import transformers

    from recitation.models._decode import score_texts

    tok = transformers.AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    model: Any = transformers.AutoModelForCausalLM.from_pretrained(
        model_dir, local_files_only=True, dtype=torch.float64)
    model.eval()
    return [score_texts(model, tok, [t])[0] for t in texts]


def _token_diffs(ref: Sequence[Any], got: Sequence[Any]) -> dict[str, dict[str, float]]:
    out = {}
    for name in FIELDS:
        diffs = [abs(a - b) for r, g in zip(ref, got, strict=True)
                 for a, b in zip(getattr(r, name), getattr(g, name), strict=True)]
        out[name] = {"max_abs": max(diffs), "mean_abs": sum(diffs) / len(diffs)}
    return out


def detector_scores(texts: Sequence[str], scores: Sequence[Any]) -> list[dict[str, float]]:
    """Every white-box detector score of each text (``whitebox_scores``)."""
    from recitation.detect.whitebox import whitebox_scores

    return [{d.detector: d.score for d in whitebox_scores(str(i), t, s)}
            for i, (t, s) in enumerate(zip(texts, scores, strict=True))]


def compare(texts: Sequence[str], ref: Sequence[Any], got: Sequence[Any]) -> dict[str, Any]:
    """How far ``got`` is from ``ref``: per field, the largest and mean absolute difference
    over every token; per detector, the largest difference relative to ``max(1, |score|)``
    over the texts (:data:`TOLERANCE`); whether the tokens are the
    same; how many ranks differ (near-ties may swap: reported, not judged)."""
    same_tokens = all(r.token_ids == g.token_ids for r, g in zip(ref, got, strict=True))
    if not same_tokens:
        return {"same_tokens": False}
    det_ref, det_got = detector_scores(texts, ref), detector_scores(texts, got)
    pairs = list(zip(det_ref, det_got, strict=True))
    detectors = {name: max(abs(a[name] - b[name]) / max(1.0, abs(a[name])) for a, b in pairs)
                 for name in det_ref[0]}
    ranks = sum(a != b for r, g in zip(ref, got, strict=True)
                for a, b in zip(r.rank, g.rank, strict=True))
    return {"same_tokens": True, "tokens": sum(len(r.logprobs) for r in ref),
            "fields": _token_diffs(ref, got), "detectors": detectors,
            "rank_differences": ranks}


def within(diff: dict[str, Any], tolerance: float = TOLERANCE) -> tuple[bool, float]:
    """Whether every per-token signal (absolute) and detector score (relative) of ``diff``
    is within ``tolerance``, and the largest difference found."""
    if not diff.get("same_tokens"):
        return False, float("inf")
    worst = max([f["max_abs"] for f in diff["fields"].values()]
                + list(diff["detectors"].values()))
    return worst <= tolerance, worst


def signal_summary(scores: Sequence[Any]) -> dict[str, float]:
    """The reference's signals at a glance (shows the distributions are not flat)."""
    lp = [x for s in scores for x in s.logprobs]
    top = [x for s in scores for x in s.top_logprob]
    sd = [x for s in scores for x in s.std_logprob]
    return {"mean_logprob": sum(lp) / len(lp), "mean_top_logprob": sum(top) / len(top),
            "mean_std_logprob": sum(sd) / len(sd)}


def correctness(model_dir: Path, texts: Sequence[str], device: str,
                timed: Callable[[str], Any]) -> dict[str, Any]:
    """The phase for one model (module docstring); ``timed(label)`` is a context manager
    that records how long each step took."""
    if device.startswith("cuda"):
        with timed("reference: cpu float32"):
            ref = local_scores(model_dir, "cpu", "float32", texts)
        reference = "cpu float32, LocalModel.score_sync (batched)"
    else:
        with timed("reference: cpu float64"):
            ref = float64_scores(model_dir, texts)
        reference = "cpu float64, _decode.score_texts one text at a time (no CUDA: no device pair)"
    with timed(f"{device} float32"):
        f32 = local_scores(model_dir, device, "float32", texts)
    with timed(f"{device} bfloat16"):
        bf16 = local_scores(model_dir, device, "bfloat16", texts)
    return {"texts": len(texts), "reference": reference,
            "candidate": f"{device} float32, LocalModel.score_sync (batched)",
            "reference_signals": signal_summary(ref), "float32": compare(texts, ref, f32),
            "bfloat16": compare(texts, ref, bf16)}
