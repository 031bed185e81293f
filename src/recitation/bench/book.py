"""``recitation bench book``: how much of a book comes out, where the truth is known (issue 50).

The whole-work organism (``organism build --preset book``, or ``book-quick`` for CI:
:mod:`recitation.organism.work`) read one work straight through once per epoch; its
checkpoints at epochs 1, 4 and 16 are the doses, epoch 0 the base model. On each checkpoint
three extraction methods run on the same work with the same budget of target calls
(``calls``), each reply at most ``reply_tokens`` tokens, greedy:

* **continue** (:mod:`recitation.extract.continue_book`, completion mode): the opening, then
  the model's own continuation, the paper's stopping rules;
* **prefix probing**: ``calls`` probes evenly spaced through the work, each given the
  ``prefix_words`` words before its place (the prefix probe job);
* **RECAP** (the extract job's ``recap`` method, the model as its own helper and judge as in
  an audit): events evenly spaced through the work, each ``event_words`` long with its first
  sentence given, ``recap_rounds`` feedback rounds; as many events as fit the budget at
  ``2 + 2 x rounds`` target calls per event (DSP, verifier, then a hint and a refinement per
  round).

Each method's replies (every attempt RECAP made) are measured against the whole work with
the paper's whole-book near-verbatim recall (:mod:`recitation.metrics.book_recall`); what a
prompt gave is never counted. Every run is an ordinary run under ``OUT/runs`` (its calls in
its store and the response cache), so a stopped benchmark resumes.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from recitation.metrics.book_recall import BookText, book_recall
from recitation.runs.config import parse_config
from recitation.runs.store import RunStore

METHODS = ("continue", "prefix", "recap")


class BookBenchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    preset: str = "book"
    calls: int = Field(24, ge=2, description="target calls per method and checkpoint")
    reply_tokens: int = Field(256, ge=8)
    prefix_words: int = Field(50, ge=5)
    event_words: int = Field(120, ge=20)
    recap_rounds: int = Field(1, ge=0)
    methods: tuple[str, ...] = METHODS
    cache: bool = True


def work_book(cfg: BookBenchConfig, out: Path) -> tuple[Any, Path]:
    """The organism's config and its work written to ``OUT/book.txt`` (what it read)."""
    from recitation.organism.config import make_config
    from recitation.organism.data import load_novels
    from recitation.organism.work import work_text

    org = make_config(preset=cfg.preset)
    _, text = work_text(org, load_novels(org))
    out.mkdir(parents=True, exist_ok=True)
    path = out / "book.txt"
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return org, path


def book_text(path: Path) -> BookText:
    from recitation.corpus.books import load_book

    book = load_book(path)
    return BookText.of([(c.title or f"chapter {i + 1}", c.full_text)
                        for i, c in enumerate(book.chapters)])


def _windows(book: BookText, n: int, before: int, size: int) -> list[tuple[int, int]]:
    """``n`` places evenly spaced in the book, each with ``before`` words before it and
    ``size`` words from it (``(start, end)`` word ranges)."""
    last = max(before, len(book) - size)
    return [(p - before, min(len(book), p + size))
            for p in (before + round(k * (last - before) / max(1, n - 1)) for k in range(n))]


def write_inputs(cfg: BookBenchConfig, book: BookText, out: Path) -> dict[str, Path]:
    """The prefix probes (JSONL) and RECAP's events (an EchoTrace book) of the work."""
    from recitation.audit.recap import write_book

    probes = out / "probes.jsonl"
    rows = [{"id": f"probe{k:03d}", "text": book.passage(a, b)}
            for k, (a, b) in enumerate(_windows(book, cfg.calls, cfg.prefix_words,
                                                cfg.prefix_words))]
    probes.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    events = events_for(cfg.calls, cfg.recap_rounds)
    ev_rows = [{"id": f"event{k:03d}", "text": book.passage(a, b)}
               for k, (a, b) in enumerate(_windows(book, events, 0, cfg.event_words))]
    recap = write_book(ev_rows, out / "recap_book.json", "the work")
    return {"prefix": probes, "recap": recap}


def run_config(method: str, spec: str, cfg: BookBenchConfig, book: Path,
               inputs: dict[str, Path]) -> Any:
    from recitation.models.config import parse_model_spec

    model = parse_model_spec(spec)
    if method == "continue":
        job, params = "continue", {"book": str(book), "mode": "completion",
                                   "max_calls": cfg.calls, "max_new_tokens": cfg.reply_tokens}
    elif method == "prefix":
        job, params = "prefix_probe", {
            "source": "jsonl", "path": str(inputs["prefix"]), "max_words": 2 * cfg.prefix_words,
            "prefix_fraction": 0.5, "keep_spacing": True, "mode": "completion",
            "max_new_tokens": cfg.reply_tokens}
    else:
        job, params = "extract", {
            "book": str(inputs["recap"]), "format": "echotrace", "methods": ["recap"],
            "recap": {"max_new_tokens": cfg.reply_tokens, "max_rounds": cfg.recap_rounds,
                      "feedback_max_tokens": cfg.reply_tokens}}
    return parse_config({"job": job, "name": f"book-{method}", "seed": 0, "model": model,
                         "cache": cfg.cache, "params": params}, source="bench book")


def texts_of(method: str, run_dir: Path) -> list[str]:
    """Every reply of the run's target that the measure reads (module docstring)."""
    from recitation.records import EventRecord

    with RunStore(run_dir) as store:
        if method == "continue":
            return ["\n".join(s["response"] for s in r["steps"] if s["accepted"])
                    for _, r in store.results("continue")]
        if method == "prefix":
            return [r["continuation"] for _, r in store.results("prefix_probe")]
        recs = [EventRecord.model_validate(r) for _, r in store.results("extract")]
    return [a.text for r in recs for a in r.attempts
            if a.text and (a.opening or a.stage == "refine")]


def _target_calls(run_dir: Path) -> dict[str, Any]:
    """Calls, tokens and model seconds (the calls' latencies, so a resumed benchmark keeps
    them) of the run's target (RECAP's helper and judge are the target)."""
    with RunStore(run_dir) as store:
        t = store.call_totals()
    return {"calls": int(t["calls"]), "output_tokens": int(t["output_tokens"]),
            "model_seconds": round(float(t["latency_s"]), 1)}


def run_one(key: str, run_cfg: Any, out: Path) -> Path:
    """The run for ``key``, created once (its folder kept in ``OUT/runs.json``) and executed
    or resumed until complete."""
    from recitation.runs.runner import create_run, execute

    index = out / "runs.json"
    known = json.loads(index.read_text(encoding="utf-8")) if index.exists() else {}
    if key not in known:
        known[key] = create_run(run_cfg, out / "runs").name
        index.write_text(json.dumps(known, indent=1) + "\n", encoding="utf-8")
    run_dir = out / "runs" / str(known[key])
    with RunStore(run_dir) as store:
        done = store.get_meta("status") == "completed"
    if not done:
        asyncio.run(execute(run_dir))
    return run_dir


def measure(cfg: BookBenchConfig, out: Path,
            progress: Callable[[str], None] = print) -> dict[str, Any]:
    """Every method on every checkpoint (module docstring); the rows, also written to
    ``OUT/book-bench.json``."""
    org, path = work_book(cfg, out)
    book = book_text(path)
    inputs = write_inputs(cfg, book, out)
    rows, texts = [], {}
    for epoch in (0, *org.keep_epochs):
        spec = f"organism:{org.name}:epoch{epoch}"
        for method in cfg.methods:
            run_dir = run_one(f"{method}-epoch{epoch}", run_config(method, spec, cfg, path,
                                                                   inputs), out)
            texts[f"{method}-epoch{epoch}"] = got = texts_of(method, run_dir)
            r = book_recall(book, got)
            rows.append({"epoch": epoch, "method": method, **_target_calls(run_dir),
                         "nv_recall": r.nv_recall, "covered_words": r.covered,
                         "longest_block_words": r.longest_block,
                         "longest_run_words": r.longest_run, "run": run_dir.name})
            progress(f"epoch {epoch} {method}: nv-recall {r.nv_recall:.1%} "
                     f"({r.covered}/{len(book)} words)")
    res = {"config": cfg.model_dump(mode="json"), "organism": org.name,
           "cpus": os.cpu_count(), "work": org.work, "book_words": len(book),
           "build": organism_build(org.name), "rows": rows}
    (out / RESULTS).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    with gzip.open(out / TEXTS, "wt", encoding="utf-8") as f:
        json.dump({"book": path.read_text(encoding="utf-8"), "texts": texts}, f)
    return res


RESULTS = "book-bench.json"
"""The rows of a benchmark (:func:`measure`), under its output folder."""
TEXTS = "book-texts.json.gz"
"""The work as the organism read it (``book``) and what each method produced on each
checkpoint (``texts``, keyed ``METHOD-epochN``: the texts the measure read), beside
``book-bench.json``: the records a kept benchmark is checked against."""


def organism_build(name: str) -> dict[str, Any]:
    """The organism's build as its manifest records it: wall time, device, dtype, and each
    kept checkpoint's training loss."""
    from recitation.organism.paths import read_manifest

    m = read_manifest(name)
    return {"seconds": m.get("build_seconds"), "device": m.get("device"),
            "dtype": m.get("dtype"), "train_tokens_per_epoch": m.get("train_tokens_per_epoch"),
            "losses": {str(e["epoch"]): e["train_loss"] for e in m.get("epochs", [])}}


def keep(out: Path, keep_dir: Path, preset: str) -> list[Path]:
    """Copy the benchmark's records (``book-bench.json`` and its texts) to ``keep_dir`` as
    ``PRESET.json`` and ``PRESET-texts.json.gz``."""
    import shutil

    keep_dir.mkdir(parents=True, exist_ok=True)
    pairs = [(out / RESULTS, keep_dir / f"{preset}.json"),
             (out / TEXTS, keep_dir / f"{preset}-texts.json.gz")]
    for src, dst in pairs:
        shutil.copyfile(src, dst)
    return [dst for _, dst in pairs]


def markdown(res: dict[str, Any]) -> str:
    """The table of a benchmark's rows (docs/groundtruth-results.md)."""
    c = res["config"]
    lines = [f"Organism `{res['organism']}`: {res['work']}, {res['book_words']:,} words as "
             f"the measure reads them; budget {c['calls']} target calls per method and "
             f"checkpoint, replies of at most {c['reply_tokens']} tokens, greedy.", "",
             "| checkpoint | method | nv-recall | words covered | longest block | calls | "
             "output tokens | model seconds |", "|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        name = "base" if r["epoch"] == 0 else f"epoch {r['epoch']}"
        lines.append(f"| {name} | {r['method']} | {r['nv_recall']:.1%} | "
                     f"{r['covered_words']:,} | {r['longest_block_words']:,} | {r['calls']} | "
                     f"{r['output_tokens']:,} | {r['model_seconds']:,.0f} |")
    total = sum(r["model_seconds"] for r in res["rows"])
    lines += ["", f"Model time, all runs: {total / 60:.1f} min (the calls' latencies, "
              f"{res.get('cpus', '?')} CPU cores, float32)."]
    b = res.get("build") or {}
    if b.get("seconds"):
        losses = ", ".join(f"epoch {e} {v:.3f}" for e, v in b["losses"].items() if v is not None)
        lines.append(f"Organism build: {b['seconds'] / 60:.0f} min ({b['device']}, "
                     f"{b['dtype']}); training loss {losses}.")
    return "\n".join(lines)


def equal_budget(res: dict[str, Any]) -> bool:
    """Every method used at most the stated number of target calls."""
    return all(r["calls"] <= res["config"]["calls"] for r in res["rows"])


def events_for(calls: int, rounds: int) -> int:
    """RECAP's events within ``calls`` target calls (module docstring)."""
    return max(1, math.floor(calls / (2 + 2 * rounds)))
