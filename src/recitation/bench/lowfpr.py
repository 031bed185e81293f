"""Detectors at 1% and 0.1% false positives, with the threshold set on one part of the
non-members and the rates read on another, and the leaderboard built from them.

* **Split.** The organism's non-members are split once, seeded, in two halves by passage id
  (the same halves for every method): the *calibration* half sets each method's threshold,
  the *test* half gives the false-positive rate it really has.
* **Threshold.** :func:`recitation.metrics.stats.threshold_at_fpr` on the calibration half:
  the ``(k + 1)``-th largest score, ``k = floor(alpha * n)``, so that at most ``k``
  calibration non-members score above it. When ``alpha * n < 1`` (0.1% of fewer than 1,000)
  this is the largest calibration score, the strictest threshold those non-members can set,
  and the row says so (``heldout_exact_*`` false).
* **Rates.** TPR: the members of the dose group above the threshold; FPR: the test
  non-members above it; each with its exact (Clopper-Pearson, 95%) interval
  (:func:`recitation.metrics.stats.clopper_pearson`, scipy's ``binomtest``).

The leaderboard ranks every detector score of one checkpoint by its held-out TPR at 1% FPR
within its access level (what it needs of the model: text only, log-probabilities, the full
distribution, a reference model; from the method registry), with its cost per text.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from typing import Any

from recitation.metrics.stats import clopper_pearson, threshold_at_fpr

LOW_FPRS: tuple[tuple[str, float], ...] = (("1", 0.01), ("0.1", 0.001))
ALL_CACHED = 0.995
"""A unit whose calls the response cache answered (at least this share) made the same calls
as another unit: its tokens and CPU seconds are that unit's, not shown again."""
ACCESS_LEVELS = ("black-box text", "log-probabilities", "full distribution",
                 "reference model")


def calibration_half(nonmember_ids: Iterable[str], seed: int) -> frozenset[str]:
    """The non-members that set thresholds: a seeded half of them (by id)."""
    order = sorted(set(nonmember_ids))
    random.Random(f"heldout:{seed}").shuffle(order)
    return frozenset(order[: len(order) // 2])


def heldout_rates(positives: Sequence[float], negatives: dict[str, float],
                  calibration: frozenset[str]) -> dict[str, Any]:
    """TPR and FPR at 1% and 0.1% with thresholds from the calibration half."""
    cal = [v for k, v in negatives.items() if k in calibration]
    test = [v for k, v in negatives.items() if k not in calibration]
    out: dict[str, Any] = {"n_calibration": len(cal), "n_test_nonmembers": len(test)}
    if not cal or not test or not positives:
        return out
    for tag, alpha in LOW_FPRS:
        tau = threshold_at_fpr(cal, alpha)
        tp = sum(v > tau for v in positives)
        fp = sum(v > tau for v in test)
        out |= {f"heldout_tpr_at_{tag}": tp / len(positives),
                f"heldout_tpr_at_{tag}_ci": list(clopper_pearson(tp, len(positives))),
                f"heldout_fpr_at_{tag}": fp / len(test),
                f"heldout_fpr_at_{tag}_ci": list(clopper_pearson(fp, len(test))),
                f"heldout_exact_{tag}": math.floor(alpha * len(cal) + 1e-9) >= 1}
    return out


def access_level(score: str) -> str:
    """The access a score needs, from the detector that writes it (the registry); prefix
    probing's scores (``prefix_*``) need generation only."""
    from recitation import methods
    from recitation.methods import Access

    score = score.split("@")[0]  # a published-setting variant: its detector's access
    for info in methods.all_methods("detector"):
        if score in info.writes:
            if Access.REFERENCE_MODEL in info.access:
                return "reference model"
            if Access.FULL_DISTRIBUTION in info.access:
                return "full distribution"
            if Access.LOGPROBS in info.access:
                return "log-probabilities"
            return "black-box text"
    return "black-box text" if score.startswith("prefix_") else "log-probabilities"


def leaderboard_rows(results: dict[str, Any], epoch: int, dose: str = "all"
                     ) -> list[dict[str, Any]]:
    """Every score of checkpoint ``epoch`` for members of ``dose``: access level, held-out
    TPR at 1% and 0.1% FPR, AUC, and its unit's cost per text; best first per level."""
    rows = []
    for r in results["detection"]:
        if r["epoch"] != epoch or r["dose"] != dose or "heldout_tpr_at_1" not in r:
            continue
        unit: dict[str, Any] = next((c for c in results["costs"] if c["unit"] == r["family"]
                                     and c["epoch"] == epoch), {})
        texts = max(1, unit.get("texts", 0))
        rows.append({"method": r["method"], "unit": r["family"],
                     "access": access_level(r["method"]), "auc": r["auc"],
                     **{k: v for k, v in r.items() if k.startswith("heldout_")
                        or k in ("n_members", "n_calibration", "n_test_nonmembers")},
                     "calls_per_text": unit.get("calls", 0) / texts,
                     "tokens_per_text": (unit.get("input_tokens", 0)
                                         + unit.get("output_tokens", 0)) / texts,
                     "cpu_s_per_text": unit.get("cpu_seconds", 0.0) / texts,
                     "cached_share": unit.get("from_cache", 0) / max(1, unit.get("calls", 0))})
    rank = {a: i for i, a in enumerate(ACCESS_LEVELS)}
    rows.sort(key=lambda x: (rank.get(x["access"], 9), -x["heldout_tpr_at_1"], -x["auc"]))
    return rows


def _rate(row: dict[str, Any], what: str, tag: str) -> str:
    v, ci = row.get(f"heldout_{what}_at_{tag}"), row.get(f"heldout_{what}_at_{tag}_ci")
    if v is None or ci is None:
        return "-"
    mark = "" if row.get(f"heldout_exact_{tag}", True) else "*"
    return f"{v:.3f}{mark} [{ci[0]:.3f}, {ci[1]:.3f}]"


def _line(r: dict[str, Any]) -> str:
    if "calls_per_text" not in r:
        cost = "- | - | - | -"
    elif r["cached_share"] >= ALL_CACHED:  # another unit's calls: their cost is counted there
        cost = f"{r['calls_per_text']:.2f} | cached | cached | {r['cached_share']:.0%}"
    else:
        cost = (f"{r['calls_per_text']:.2f} | {r['tokens_per_text']:.0f} | "
                f"{r['cpu_s_per_text']:.3f} | {r['cached_share']:.0%}")
    return (f"| {r['access']} | `{r['method']}` | {r.get('n_members')} / "
            f"{r.get('n_calibration')} / {r.get('n_test_nonmembers')} | "
            f"{_rate(r, 'tpr', '1')} | {_rate(r, 'fpr', '1')} | {_rate(r, 'tpr', '0.1')} | "
            f"{_rate(r, 'fpr', '0.1')} | {r['auc']:.3f} | {cost} |")


def blind_rows(results: dict[str, Any], dose: str) -> list[dict[str, Any]]:
    """The blind baseline (the passage's length, no model) for members of ``dose``."""
    return [r | {"access": "none (blind baseline)"} for r in results.get("length_baseline", [])
            if r["dose"] == dose and "heldout_tpr_at_1" in r]


def leaderboard_markdown(results: dict[str, Any], epoch: int | None = None) -> str:
    """The leaderboard of one checkpoint (default: the last), per dose group, each with the
    blind baseline's row."""
    epochs = sorted({r["epoch"] for r in results["detection"] if "heldout_tpr_at_1" in r})
    if not epochs:
        return "No held-out rates in these results (re-run the analysis).\n"
    epoch = epochs[-1] if epoch is None else epoch
    org = results["organism"]
    lines = [f"Organism `{org['name']}`, checkpoint epoch {epoch}. Thresholds set on half "
             "of the non-members, rates read on the members and the other half; 95% "
             "Clopper-Pearson intervals; * where the target rate is below one calibration "
             "non-member (the threshold is their largest score). Cost: the method's unit "
             "per text scored (a unit's scores share its calls); tokens and CPU seconds count "
             "only the calls the response cache did not answer (the share it answered: "
             "'cached'; all of them: the same calls as another unit's, counted there).", ""]
    doses = list(dict.fromkeys(r["dose"] for r in results["detection"]
                               if r["epoch"] == epoch))
    for dose in doses:
        rows = leaderboard_rows(results, epoch, dose)
        if not rows:
            continue
        lines += [f"**Members: {'all' if dose == 'all' else f'dose {dose}'}** (n: members "
                  "/ calibration / test non-members; a subsampled unit has fewer)", "",
                  "| access | method | n | TPR@1% FPR | FPR read | TPR@0.1% FPR | FPR read "
                  "| AUC | calls/text | tokens/text | CPU s/text | cached |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        lines += [_line(r) for r in rows + blind_rows(results, dose)]
        lines.append("")
    return "\n".join(lines)


def winners(results: dict[str, Any], epoch: int, dose: str = "all") -> dict[str, str]:
    """Per access level, the score with the highest held-out TPR at 1% FPR."""
    out: dict[str, str] = {}
    for r in leaderboard_rows(results, epoch, dose):
        out.setdefault(r["access"], r["method"])
    return out
