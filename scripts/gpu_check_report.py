"""The GPU check's printed report, from the figures ``gpu_check.py`` writes to ``--json``."""

from __future__ import annotations

from typing import Any


def _si(x: float, unit: str) -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"


def correctness_lines(figures: dict[str, Any]) -> list[str]:
    lines = ["", "correctness (max |difference| per token; detectors, LOSS, zlib, Min-K%, "
             "Min-K%++ and Gap-K%: max |difference| / max(1, |score|))"]
    for key, res in figures.get("correctness", {}).items():
        lines.append(f"  {key}: {res['texts']} texts; reference {res['reference']}")
        sig = res["reference_signals"]
        lines.append(f"    reference: mean log p {sig['mean_logprob']:.2f}, mean top-1 log p "
                     f"{sig['mean_top_logprob']:.2f}, mean sigma {sig['mean_std_logprob']:.2f}")
        for dtype in ("float32", "bfloat16"):
            diff = res[dtype]
            if not diff.get("same_tokens"):
                lines.append(f"    {dtype}: the tokens differ from the reference's")
                continue
            fields = ", ".join(f"{k} {v['max_abs']:.1e}" for k, v in diff["fields"].items())
            det = max(diff["detectors"].values())
            lines.append(f"    {dtype:8s} {diff['tokens']} tokens: {fields}; detectors "
                         f"{det:.1e}; ranks differing {diff['rank_differences']}")
    return lines


def throughput_lines(figures: dict[str, Any]) -> list[str]:
    t = figures.get("throughput")
    if not t:
        return []
    peak, peak32 = t["peak_bfloat16"], t["peak_float32"]
    ours, fwd, naive = t["ours"], t["forward_only"], t["naive"]
    small = (["  small mode: tiny models and n = 256 products exercise the code; these are not "
              "the device's figures"] if figures["mode"] == "small" else [])
    return [
        "", "throughput (llama-1b; FLOPs = 2 x matmul params x tokens + causal attention)",
        *small,
        f"  matmul peak: bfloat16 {_si(peak['flops_per_s'], 'FLOP/s')}, float32 "
        f"{_si(peak32['flops_per_s'], 'FLOP/s')} (n = {peak['n']})",
        f"  ours (bfloat16, LocalModel.score_sync): {ours['texts']} texts x {ours['passes']} "
        f"passes, {ours['tokens']:,} tokens in {ours['seconds']:.1f} s: "
        f"{_si(ours['tokens_per_s'], 'tok/s')}, {_si(ours['flops_per_s'], 'FLOP/s')}, "
        f"{ours['share_of_peak']:.1%} of the bfloat16 peak",
        f"  forward pass alone: {_si(fwd['tokens_per_s'], 'tok/s')}, "
        f"{fwd['share_of_peak']:.1%} of the peak",
        f"  naive (float32, one text at a time): {naive['texts']} texts, "
        f"{_si(naive['tokens_per_s'], 'tok/s')}, {naive['share_of_float32_peak']:.1%} of "
        f"the float32 peak",
        f"  ours / naive: {t['ratio_to_naive']:.1f}x (the peaks' ratio, bfloat16 / float32: "
        f"{peak['flops_per_s'] / peak32['flops_per_s']:.1f}x)",
    ]


def train_lines(figures: dict[str, Any]) -> list[str]:
    tr, gen = figures.get("training"), figures.get("generation")
    if not tr or not gen:
        return []
    losses = " -> ".join(f"{x:.3f}" for x in tr["losses"])
    return [
        "", "organism training and generation (smollm2-135m)",
        f"  training: {tr['passages']} passages, {tr['steps']} steps of {tr['batch_size']}, "
        f"autocast {tr['autocast']}; loss {losses}; {_si(tr['tokens_per_s'], 'tok/s')}",
        f"  generation ({gen['dtype']}): {gen['rows']} rows x {gen['max_tokens']} tokens, "
        f"{gen['tokens']} tokens in {gen['seconds']:.2f} s "
        f"({_si(gen['tokens_per_s'], 'tok/s')}); same text twice: {gen['repeatable']}",
    ]


def check_lines(figures: dict[str, Any]) -> list[str]:
    lines = [""] + [f"error in {name}: see the JSON's errors" for name in
                    figures.get("errors", {})] + ["checks"]
    for c in figures["checks"]:
        value = c["value"]
        shown = f"{value:.3g}" if isinstance(value, float) else str(value)
        why = "" if c["judged"] else "; judged on CUDA in the full mode"
        lines.append(f"  {c['verdict']:10s} {c['name']}: {shown} (goal: {c['goal']}{why})")
    return lines


def show(figures: dict[str, Any]) -> None:
    env = figures["environment"]
    head = (f"GPU check, {figures['mode']} mode, on {figures['device']} "
            f"({env['device_name']}); python {env['python']}, torch {env['torch']}, "
            f"transformers {env['transformers']}; {figures['seconds']:.0f} s")
    lines = [head, *correctness_lines(figures), *throughput_lines(figures),
             *train_lines(figures), *check_lines(figures)]
    print("\n".join(lines), flush=True)
