"""The ground-truth benchmark's results as Markdown tables (docs/benchmarks.md, results.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _ci(v: float | None, ci: Sequence[float | None] | None) -> str:
    if v is None:
        return "-"
    if not ci or ci[0] is None or ci[1] is None:
        return f"{v:.2f}"
    return f"{v:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]"


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + [
        "| " + " | ".join(r) + " |" for r in rows]


def detection_table(results: dict[str, Any], methods: Sequence[str] | None = None
                    ) -> list[str]:
    """Per method x epoch: AUC for all members and per dose; TPR at 1% and 5% FPR (all)."""
    rows_by: dict[tuple[str, int], dict[str, dict[str, Any]]] = {}
    for r in results["detection"]:
        rows_by.setdefault((r["method"], r["epoch"]), {})[r["dose"]] = r
    doses = sorted({r["dose"] for r in results["detection"] if r["dose"] != "all"}, key=int)
    order = list(dict.fromkeys(r["method"] for r in results["detection"]))
    keep = [m for m in order if methods is None or m in methods]
    rows = []
    for method in keep:
        for (m, epoch), by_dose in sorted(rows_by.items(), key=lambda kv: kv[0][1]):
            if m != method or "all" not in by_dose:
                continue
            a = by_dose["all"]
            rows.append([f"`{method}`", str(epoch), _ci(a["auc"], a["auc_ci"])]
                        + [f"{by_dose[d]['auc']:.2f}" if d in by_dose else "-" for d in doses]
                        + [_ci(a["tpr_at_1"], a["tpr_at_1_ci"]),
                           _ci(a["tpr_at_5"], a["tpr_at_5_ci"])])
    head = (["method", "epoch", "AUC all [95% CI]"] + [f"AUC {d}x" for d in doses]
            + ["TPR@1% FPR", "TPR@5% FPR"])
    return _table(head, rows)


def length_table(results: dict[str, Any]) -> list[str]:
    rows = [[r["dose"], _ci(r["auc"], r["auc_ci"])] for r in results["length_baseline"]]
    return _table(["members (dose)", "length-only AUC [95% CI]"], rows)


def extraction_table(results: dict[str, Any]) -> list[str]:
    rows = [[str(r["epoch"]), r["group"], str(r["n"]),
             f"{r['exact']}/{r['n']} " + _ci(r["exact_share"], r["exact_ci"]),
             f"{r['passages40']}/{r['n']}", f"{r['mean_lcp_words']:.1f}",
             f"{r['mean_rouge_l']:.2f}"] for r in results["extraction"]]
    return _table(["epoch", "group", "n", "exact continuation [95% CI]",
                   ">= 1 40-token passage", "mean LCP words", "mean ROUGE-L F1"], rows)


def agentic_table(results: dict[str, Any]) -> list[str]:
    cost = {(c["epoch"], c["method"]): c for c in results.get("agentic_costs", [])}
    rows = []
    for r in results.get("agentic", []):
        c = cost.get((r["epoch"], r["method"]), {})
        rows.append([str(r["epoch"]), r["method"], r["group"], str(r["n"]),
                     f"{r['exact']}/{r['n']} " + _ci(r["exact_share"], r["exact_ci"]),
                     f"{r['passages40']}/{r['n']} "
                     + _ci(r["passages40_share"], r["passages40_ci"]),
                     f"{r['mean_rouge_l']:.2f}", str(c.get("prompts", "-")),
                     str(c.get("input_tokens", 0) + c.get("output_tokens", 0)) if c else "-"])
    return _table(["epoch", "method", "group", "n", "whole passage [95% CI]",
                   ">= 1 40-token passage [95% CI]", "mean ROUGE-L recall",
                   "calls (all passages)", "tokens (all passages)"], rows)


def overlap_table(results: dict[str, Any]) -> list[str]:
    rows = [[str(r["epoch"]), r["group"], str(r["n"]), f"{r['memo_pct']:.0f}",
             f"{r['mia_pct']:.0f}", f"{r['both_pct']:.0f}"] for r in results["overlap"]]
    return _table(["epoch", "group", "n", "% memorized (PEARL bit flip > 0.2)",
                   "% member (perplexity < 60)", "% both"], rows)


def cost_table(results: dict[str, Any]) -> list[str]:
    agg: dict[str, list[float]] = {}
    for r in results["costs"]:  # the mean over the checkpoints each unit ran on
        a = agg.setdefault(r["unit"], [0, 0, 0, 0.0, 0.0, 0])
        for i, k in enumerate(("calls", "input_tokens", "output_tokens", "cpu_seconds",
                               "wall_seconds")):
            a[i] += r[k]
        a[5] += 1
    rows = [[u, str(int(a[5]))] + [f"{a[i] / a[5]:.0f}" for i in range(5)]
            for u, a in agg.items()]
    lines = _table(["unit", "checkpoints", "calls / checkpoint", "input tokens",
                    "output tokens", "CPU s", "wall s"], rows)
    cached = sum(r.get("from_cache", 0) for r in results["costs"])
    if cached:  # --cache: those calls cost nothing here, so the table is not their cost
        total = sum(r["calls"] for r in results["costs"])
        lines += ["", f"{cached} of these {total} calls were answered by the response cache "
                  "(--cache): the CPU and wall seconds are not what they cost."]
    return lines


def markdown(results: dict[str, Any], methods: Sequence[str] | None = None) -> str:
    """Every table of the results, with headings."""
    org = results["organism"]
    lines = [f"Organism `{org['name']}` (fingerprint {str(org['fingerprint'])[:12]}), "
             f"epochs {[e['epoch'] for e in org['epochs']]}.", "",
             "**Detection** (members of each dose vs all non-members):", ""]
    lines += detection_table(results, methods)
    if any("heldout_tpr_at_1" in r for r in results["detection"]):
        from recitation.bench.lowfpr import leaderboard_markdown

        lines += ["", "**At 1% and 0.1% false positives, thresholds on held-out non-members** "
                  "(the leaderboard of the last checkpoint):", "",
                  leaderboard_markdown(results).rstrip()]
    lines += ["", "**Length-only baseline:**", ""] + length_table(results)
    lines += ["", "**Extraction by prefix probing** (greedy, first half given):", ""]
    lines += extraction_table(results)
    if results.get("agentic"):
        lines += ["", "**Agentic extraction** (DSP, RECAP, RECAP + filter; helper "
                  f"`{results['config'].get('helper')}`):", ""]
        lines += agentic_table(results)
    if results["overlap"]:
        lines += ["", "**PEARL vs perplexity membership** (pearl-v2 table 4):", ""]
        lines += overlap_table(results)
    lines += ["", "**Cost per checkpoint** (mean over checkpoints):", ""] + cost_table(results)
    if results["errors"]:
        lines += ["", f"**Errors recorded** ({len(results['errors'])}):", ""]
        lines += [f"- {e}" for e in results["errors"][:20]]
    return "\n".join(lines) + "\n"
