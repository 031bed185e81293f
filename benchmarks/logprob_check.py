"""The log-probability integrity check (``recitation.models.integrity.check_logprobs``) on
every configuration of the "Measured" table of docs/detection.md: the embedded SmolLM2-135M
in float32 and in bfloat16 on the CPU, the quick organism, a real vLLM server (CPU build,
float32) in its echo and prompt_logprobs forms, and ``recitation serve`` through the openai
backend, correct and with each ``--logprob-fault`` (the ``batch`` fault, whose figures depend
on the order requests arrive, ``--repeats`` times, each on a fresh server).

    .venv/bin/recitation organism build --quick          # once (docs/organism.md)
    nice -n 5 .venv/bin/python benchmarks/logprob_check.py [--no-vllm] [--write-docs]
    .venv/bin/python benchmarks/logprob_check.py --from-records --write-docs  # table only

Writes the reports (each with the check's wall time) to ``benchmarks/logprob_check.json``
and, with ``--write-docs``, the table between the ``logprob-check`` markers of
docs/detection.md from them. The vLLM environment is scripts/vllm_env.sh's (cached);
``--no-vllm`` leaves those rows out, and the table says they were not run.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from doc_markers import write_between  # benchmarks/ is on sys.path when run as a script

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "detection.md"
RECORDS = ROOT / "benchmarks" / "logprob_check.json"
START, END = "<!-- logprob-check:start -->", "<!-- logprob-check:end -->"
ORGANISM = "organism:quick:epoch2"
FAULT_LABELS = {"shift": "serve `shift` (one position late)",
                "offset": "serve `offset` (-3 nats)",
                "scale": "serve `scale` (x 0.5, prompts only)",
                "batch": "serve `batch` (company-dependent)"}
VLLM_LABELS = {"echo": "vLLM, echo form", "prompt_logprobs": "vLLM, prompt_logprobs form"}
COLUMNS = (("repeatable", "repeatable"), ("batch", "batch_invariant"),
           ("prefix", "prefix_consistent"), ("repeat_predictable", "repeat_predictable"),
           ("generation_matches_score", "generation_matches_score"))


def check(label: str, model: Any, **extra: Any) -> dict[str, Any]:
    """One run of the check on ``model`` (closed after), its report and wall time."""
    from recitation.models.integrity import check_logprobs
    from recitation.models.managed import ManagedModel

    managed = ManagedModel(model)  # retries, no cache: as `recitation check` (a local
    # model's aclose does nothing: the float32 one is served again after)

    async def run() -> Any:
        try:
            return await check_logprobs(managed)
        finally:
            await managed.aclose()

    t0 = time.perf_counter()
    report = asyncio.run(run())
    seconds = round(time.perf_counter() - t0, 2)
    print(f"{label}: failed {report.failed or 'none'} ({seconds} s)", flush=True)
    return {"label": label, "ran": True, "seconds": seconds, **extra,
            "report": report.to_dict() | {"passed": report.passed}}


def local_rows() -> tuple[list[dict[str, Any]], Any]:
    """The embedded model in float32 and bfloat16, the quick organism (each loaded before
    its check is timed); also the float32 model, for the served rows."""
    from recitation.models.local import LocalModel

    rows, f32 = [], None
    for label, spec, dtype in (("local backend, float32", "smollm2", "float32"),
                               ("local backend, bfloat16 (CPU)", "smollm2", "bfloat16"),
                               ("the quick organism (float32)", ORGANISM, "float32")):
        model = LocalModel(spec, dtype=dtype, device="cpu")
        model.load()
        rows.append(check(label, model, spec=spec, dtype=dtype))
        if f32 is None:
            f32 = model
    return rows, f32


def serve_rows(local: Any, repeats: int) -> list[dict[str, Any]]:
    """``recitation serve`` in-process, correct and with each fault, through the openai
    backend (a fresh server per check)."""
    from recitation.models.registry import backend_for
    from recitation.serve import start_server
    from recitation.serve.logprob_faults import FAULTS, LogprobFaultModel

    rows = []
    for fault in (None, *FAULTS):
        for i in range(repeats if fault == "batch" else 1):
            served = LogprobFaultModel(local, fault) if fault else local
            with start_server(served) as h:
                model = backend_for(f"openai:smollm2@{h.url}")
                label = FAULT_LABELS[fault] if fault else "serve, no fault"
                rows.append(check(label, model, fault=fault, repeat=i))
    return rows


def vllm_rows() -> list[dict[str, Any]]:
    """A vLLM server (CPU build, float32) on the embedded model's weights, checked in both
    score forms; rows marked not run when its environment is missing or it does not start."""
    sys.path.insert(0, str(ROOT / "tests" / "models"))
    import vllm_server

    from recitation._cachedir import cache_dir
    from recitation.models.local import LocalModel
    from recitation.models.openai_backend import OpenAIModel

    python, why = vllm_server.vllm_python(cache_dir())
    if python is None:
        return not_run(f"no vLLM environment (scripts/vllm_env.sh): {why[-300:]}")
    with tempfile.TemporaryDirectory() as work:
        t0 = time.perf_counter()
        server = vllm_server.start(python, LocalModel("smollm2").transformers_dir(),
                                   "smollm2", Path(work))
        try:
            why = vllm_server.wait_ready(server)
            if why:
                return not_run(f"vLLM did not start: {why[-300:]}")
            start_s = round(time.perf_counter() - t0, 1)
            rows = []
            for form, label in VLLM_LABELS.items():
                model = OpenAIModel(server.name, base_url=server.url, api_key_env=None)
                model._score_form = form
                rows.append(check(label, model, form=form, server_start_seconds=start_s))
            return rows
        finally:
            server.stop()


def not_run(why: str) -> list[dict[str, Any]]:
    print(f"vLLM rows not run: {why}", flush=True)
    return [{"label": label, "ran": False, "why": why} for label in VLLM_LABELS.values()]


def measure(vllm: bool, repeats: int) -> list[dict[str, Any]]:
    local, f32 = local_rows()
    vrows = vllm_rows() if vllm else not_run("--no-vllm")
    return [*local, *vrows, *serve_rows(f32, repeats)]


def _fig(value: float | None) -> str:
    from recitation.check_cli import format_figure

    return format_figure(value)


def cell(results: dict[str, dict[str, Any]], name: str) -> str:
    """An invariant's figure, with the largest single difference where the mean passed
    but that maximum is at least half the tolerance; ``skipped`` where it was."""
    r = results[name]
    if r["outcome"] == "skipped":
        return "skipped"
    out = _fig(r["figure"])
    top = r["detail"].split("max ")[-1].split(";")[0] if "max " in r["detail"] else ""
    if r["outcome"] == "passed" and top and float(top) >= r["tolerance"] / 2:
        out += f" (max {_fig(float(top))})"
    return out


def spread(cells: list[str]) -> str:
    """One cell over repeated runs: the value, or ``low to high``."""
    if len(set(cells)) == 1:
        return cells[0]
    try:
        nums = sorted(float(c) for c in cells)
    except ValueError:
        return " / ".join(dict.fromkeys(cells))
    return f"{_fig(nums[0])} to {_fig(nums[-1])}"


def row(records: list[dict[str, Any]]) -> str:
    """One table row from the records of one configuration (several for repeats)."""
    label = records[0]["label"]
    if not records[0]["ran"]:
        return f"| {label} | not run ({records[0]['why'][:80]}) |" + " |" * 7
    res = [{r["name"]: r for r in rec["report"]["results"]} for rec in records]
    cells = [spread([cell(x, name) for x in res]) for _, name in COLUMNS]
    tops = [spread([cell(x, n) for x in res]) for n in ("top_consistent", "greedy_is_top")]
    cells.append("skipped" if tops == ["skipped"] * 2 else " / ".join(tops))
    fails = [[r["name"] for r in rec["report"]["results"] if r["outcome"] == "failed"]
             for rec in records]
    always = [n for n in fails[0] if all(n in f for f in fails)]
    some = [n for f in fails for n in f if n not in always]
    failed = ", ".join(always) or "none"
    if some:
        failed += f" (and in some runs {', '.join(dict.fromkeys(some))})"
    secs = sorted(rec["seconds"] for rec in records)
    secs_s = f"{secs[0]:.1f}" if len(secs) == 1 else f"{secs[0]:.1f} to {secs[-1]:.1f}"
    runs = f", {len(records)} runs" if len(records) > 1 else ""
    return f"| {label}{runs} | {' | '.join(cells)} | {failed} | {secs_s} |"


def table(records: list[dict[str, Any]]) -> str:
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault(r["label"], []).append(r)
    head = ["| | repeatable | batch | prefix | repeat_predictable | generation_matches_score "
            "| top / greedy | failed | seconds |", "|---|---|---|---|---|---|---|---|---|"]
    return "\n".join([*head, *(row(g) for g in groups.values())])


def write_docs(records: list[dict[str, Any]], repeats: int) -> None:
    """The table between the markers of docs/detection.md, with the command and the date."""
    skipped = [r["label"] for r in records if not r["ran"]]
    note = (f"Written by `benchmarks/logprob_check.py` on {datetime.date.today().isoformat()} "
            "from its records (`benchmarks/logprob_check.json`): the figures of "
            "`recitation check`; embedded SmolLM2-135M on the CPU, the same weights in "
            "vLLM's CPU build (float32), and `recitation serve` (float32) with each "
            "`--logprob-fault` through the openai backend, a fresh server per run; the "
            f"`batch` fault {repeats} times, its range shown (its figures depend on the order "
            "requests arrive). *seconds*: the check's wall time on 2 shared CPU cores, "
            "the model already loaded (or the server started).")
    started = [r["server_start_seconds"] for r in records if r.get("server_start_seconds")]
    if started:
        note += f" vLLM's server took {started[0]:.0f} s to start."
    if skipped:
        note += f" Not run: {', '.join(skipped)}."
    write_between(DOCS, START, END, f"{note}\n\n{table(records)}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--no-vllm", action="store_true", help="leave the vLLM rows out")
    p.add_argument("--repeats", type=int, default=3, help="runs of the batch fault")
    p.add_argument("--write-docs", action="store_true", help="write docs/detection.md too")
    p.add_argument("--from-records", action="store_true",
                   help="measure nothing: the table from benchmarks/logprob_check.json")
    args = p.parse_args()
    if args.from_records:
        records = json.loads(RECORDS.read_text(encoding="utf-8"))
        args.repeats = sum(r.get("fault") == "batch" for r in records)
    else:
        t0 = time.perf_counter()
        records = measure(not args.no_vllm, args.repeats)
        print(f"total {time.perf_counter() - t0:.0f} s")
        RECORDS.write_text(json.dumps(records, indent=1) + "\n", encoding="utf-8")
    print(table(records))
    if args.write_docs:
        write_docs(records, args.repeats)


if __name__ == "__main__":
    main()
