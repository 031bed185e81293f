"""``recitation index build|info|validate`` and ``recitation trace``.

``index build CORPUS DIR``: CORPUS is a JSONL file or folder, a folder of ``.txt`` files
(``--chapters``: one document per chapter) or ``kjv`` (a folder may hold symbolic links to
files and folders: followed, each real file read once); byte-level unless ``--tokenizer``
names a local model (its tokenizer: u16 or u32 by vocabulary size). ``trace GENERATIONS
--index DIR``: a ``trace`` run (resumable, ``recitation runs show``) over a JSONL of
generations; ``--model`` names the target whose tokenizer a token-level index was built with.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from recitation.models.config import add_device_option
from recitation.runs.console import console, err_console


def _tokenizer(spec: str | None) -> Any:
    if not spec:
        return None
    from recitation.models.local import LocalModel

    return LocalModel(spec).tokenizer()


def cmd_index_build(args: argparse.Namespace) -> int:
    from rich.progress import Progress

    from recitation.trace.build import build_index
    from recitation.trace.sources import iter_corpus

    tok = _tokenizer(args.tokenizer)
    t0 = time.perf_counter()
    with Progress(console=err_console, transient=True) as bar:
        task = bar.add_task("reading documents", total=None)

        def progress(stage: str, done: int, total: int) -> None:
            if stage == "documents":
                bar.update(task, description=f"reading documents: {done / 1e6:.1f} MB")
            else:
                bar.update(task, description="suffix arrays", completed=done, total=total)

        m = build_index(iter_corpus(args.corpus, chapters=args.chapters,
                                    text_field=args.text_field), args.dir,
                        tokenizer=tok, tokenizer_name=args.tokenizer,
                        max_shard_bytes=int(args.max_shard_mb * 2**20) if args.max_shard_mb
                        else None, overwrite=args.overwrite, progress=progress,
                        sources=[str(args.corpus)], workers=args.workers,
                        expected_bytes=None if args.tokenizer else _corpus_bytes(args.corpus))
    secs = time.perf_counter() - t0
    console.print(f"indexed {m.documents} documents, {m.tokens} {m.token_dtype} tokens in "
                  f"{m.shards} shard(s) into {args.dir} in {secs:.1f} s "
                  f"({m.bytes_in / 1e6 / max(secs, 1e-9) * 60:.0f} MB/min)")
    return 0


def _corpus_bytes(corpus: str) -> int | None:
    """Size of the corpus files (an upper bound on the text they hold), or None."""
    p = Path(corpus)
    if p.is_file():
        return p.stat().st_size
    if p.is_dir():
        from recitation.trace.sources import walk_files

        return sum(f.stat().st_size for f in walk_files(p))
    return None


def cmd_index_info(args: argparse.Namespace) -> int:
    from recitation.trace.index import open_index

    ix = open_index(args.dir, engine=args.engine, token_dtype=args.token_dtype)
    info = {"dirs": [str(d) for d in ix.dirs], "token_width": ix.token_width,
            "shards": ix.engine.num_shards, "tokens": ix.engine.total_tokens(),
            "documents": ix.engine.total_docs(),
            "manifest": ix.manifest.__dict__ if ix.manifest else None}
    print(json.dumps(info, indent=2))
    return 0


def cmd_index_validate(args: argparse.Namespace) -> int:
    from recitation.trace.index import open_index
    from recitation.trace.validate import validate

    ix = open_index(args.dir, engine=args.engine, token_dtype=args.token_dtype,
                    tokenizer=_tokenizer(args.tokenizer))
    from recitation.trace.simpletrace import TraceConfig

    rates = validate(ix, n_docs=args.docs, size=args.size, seed=args.seed,
                     config=TraceConfig(definitions=args.definitions, seed=args.seed))
    if args.json:
        print(json.dumps(rates, indent=2))
        return 0
    for kind, r in rates.items():
        console.print(f"{kind:15s} n={int(r['n'])}  retrieval {r['retrieval']:.2f}  exact "
                      f"{r['exact']:.2f}  pass {r['pass']:.2f}")
    return 0 if all(r["pass"] == 1.0 for r in rates.values()) else 1


def export_run(ref: str, runs_dir: Path | None, field: str, group_field: str) -> Path:
    """A run's stored generations (``field`` of each record; ``group_field`` as the group) as
    a JSONL file under ``<runs dir>/trace-inputs/``."""
    from recitation.errors import ConfigError
    from recitation.runs.runner import default_runs_dir, find_run
    from recitation.runs.store import RunStore

    run_dir = find_run(ref, runs_dir)
    with RunStore(run_dir) as store:
        rows = [{"id": item_id, "text": r[field], "group": str(r.get(group_field, "all"))}
                for item_id, r in store.results() if isinstance(r.get(field), str)]
    if not rows:
        raise ConfigError(f"run {run_dir.name} has no records with a text field '{field}' "
                          "(prefix probing: continuation; propme: generation)")
    out = (runs_dir or default_runs_dir()) / "trace-inputs" / f"{run_dir.name}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return out


def cmd_trace(args: argparse.Namespace) -> int:
    from recitation.errors import ConfigError
    from recitation.models.config import parse_model_spec
    from recitation.runs.config import parse_config
    from recitation.runs.console import execute_and_print
    from recitation.runs.runner import create_run

    if (args.generations is None) == (args.from_run is None):
        raise ConfigError("give a JSONL of generations or --from-run RUN (one of them)")
    gens = args.generations or export_run(args.from_run, args.runs_dir, args.field,
                                          args.group_field)
    params = {"index": [str(d) for d in args.index], "generations": str(gens),
              "engine": args.engine, "token_dtype": args.token_dtype, "rarity": args.rarity,
              "max_docs": args.max_docs,
              "text_field": args.text_field, "n_span": args.n_span,
              "nv_threshold": args.nv_threshold, "text_mode": not args.no_text_mode,
              "definitions": args.definitions, "seed": args.seed}
    cfg = parse_config({"job": "trace", "name": "trace", "model": parse_model_spec(args.model),
                        "params": params}, source="trace")
    run_dir = create_run(cfg, args.runs_dir)
    if args.json:
        return _trace_json(run_dir)
    console.print(f"run directory: {run_dir}")
    code = execute_and_print(run_dir)
    from recitation.report.trace_sources import run_sources, sources_table

    console.print(sources_table(run_sources(run_dir)))
    return code


def _trace_json(run_dir: Path) -> int:
    """``trace --json``: the run's report and every generation's spans with the documents
    they were found in (and their metadata), as one JSON object on stdout."""
    import asyncio

    from recitation.report.trace_sources import run_sources
    from recitation.runs.console import EXIT
    from recitation.runs.runner import execute, stored_report

    outcome = asyncio.run(execute(run_dir))
    print(json.dumps({"run": str(run_dir), "status": outcome.status,
                      "report": stored_report(run_dir),
                      "generations": run_sources(run_dir)}, ensure_ascii=False, indent=1))
    return EXIT.get(outcome.status, 1)


def cmd_propme(args: argparse.Namespace) -> int:
    from recitation.models.config import parse_model_spec
    from recitation.runs.config import parse_config
    from recitation.runs.console import execute_and_print
    from recitation.runs.runner import create_run

    params: dict[str, Any] = {
        "index": [str(d) for d in args.index], "engine": args.engine, "n": args.n,
        "sets": args.sets.split(","), "prefix_words": args.prefix_words,
        "prefix_tokens": args.prefix_tokens, "prefix_min_tokens": args.prefix_min_tokens,
        "allow_copied_prompts": args.allow_copied_prompts,
        "max_new_tokens": args.max_new_tokens, "mode": args.mode,
        "definitions": args.definitions, "seed": args.seed, "sampling": args.sampling,
        "samples": args.samples}
    if args.domain:
        params["domain"] = args.domain
    if args.generic_from_helper:
        params["generic_prompts"] = "helper"
    for key in ("prefix_docs", "generic_sentences", "specific_sentences"):
        if getattr(args, key):
            params[key] = str(getattr(args, key))
    if args.helper:
        params["helper"] = parse_model_spec(args.helper)
    cfg = parse_config({"job": "propme", "name": "propme",
                        "model": parse_model_spec(args.target), "params": params},
                       source="propme")
    run_dir = create_run(cfg, args.runs_dir)
    console.print(f"run directory: {run_dir}")
    return execute_and_print(run_dir)


def add_propme_parser(sub: Any) -> None:
    p = sub.add_parser("propme", help="PROPME: capability (prefix prompts) against propensity "
                       "(generic, specific prompts), traced in a corpus index")
    p.add_argument("--index", type=Path, action="append", required=True)
    p.add_argument("--target", required=True, metavar="SPEC", help="the audited model")
    add_device_option(p)
    p.add_argument("--helper", default=None, metavar="SPEC",
                   help="writes the generic and specific prompts (default: the target)")
    p.add_argument("--n", type=int, default=100, help="prompts per set (the paper: 100)")
    p.add_argument("--sets", default="generic,specific,prefix")
    p.add_argument("--generic-sentences", type=Path, default=None, metavar="FILE",
                   help="the generic set as the authors draw it: N sentences of an outside "
                   "sample (one per line, or JSONL 'text'; theirs: Tatoeba) that do not occur "
                   "whole in the index (default sample: recitation's 197 everyday sentences)")
    p.add_argument("--generic-from-helper", action="store_true",
                   help="ours instead: the helper writes the generic prompts")
    p.add_argument("--specific-sentences", type=Path, default=None, metavar="FILE",
                   help="the specific set as the authors draw it: the same, from sources the "
                   "model cannot have seen (published after it); without one the helper "
                   "writes them (ours)")
    p.add_argument("--domain", default=None, help="the corpus's domain, for the helper")
    p.add_argument("--prefix-tokens", type=int, default=50,
                   help="prefixes as the authors cut them: a document's first N tokens (words on "
                   "a byte-level index), its raw text with newlines (default 50)")
    p.add_argument("--prefix-min-tokens", type=int, default=100,
                   help="only documents of at least this many tokens (words) (default 100)")
    p.add_argument("--allow-copied-prompts", action="store_true",
                   help="keep helper-written prompts found whole in the corpus (refused by "
                   "default, with a warning: they are prefix attacks, not ordinary use)")
    p.add_argument("--prefix-words", type=int, default=None,
                   help="ours instead: the first N words joined by single spaces")
    p.add_argument("--prefix-docs", type=Path, default=None,
                   help="JSONL of the training documents to cut prefixes from (default: the "
                   "index's documents)")
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument("--mode", choices=["auto", "chat", "completion"], default="auto",
                   help="auto: under --definitions propme every set as a plain completion "
                   "where the backend offers one (else chat, with a warning); under "
                   "recitation prefixes as completions, generic/specific as chat")
    p.add_argument("--sampling", choices=["greedy", "authors"], default="greedy",
                   help="greedy: one reply per prompt at temperature 0 (the paper's, the "
                   "default); authors: the released script's, 10 samples per prompt at "
                   "temperature 0.7, top_p 0.95, seed 42 + sample, prompts cut to their last "
                   "256 tokens, sets over 1,000 prompts subsampled to 1,000")
    p.add_argument("--samples", type=int, default=None, metavar="N",
                   help="samples per prompt under --sampling authors (default 10)")
    p.add_argument("--runs-dir", type=Path, default=None)
    p.add_argument("--engine", choices=["auto", "numpy", "infini-gram"], default="auto")
    _definitions(p, "propme")
    p.set_defaults(func=cmd_propme)


def _definitions(p: Any, default: str) -> None:
    from recitation.trace.simpletrace import DEFINITIONS

    p.add_argument("--definitions", choices=DEFINITIONS, default=default,
                   help=f"'recitation': ours, every verbatim copy wherever it ends; 'propme': "
                   f"SimpleTrace exactly as the PROPME authors' code computes it "
                   f"(docs/tracing.md, differences); default {default}")
    p.add_argument("--seed", type=int, default=0,
                   help="propme: the draw of each span's documents (theirs is unseeded)")


def _engine(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", choices=["auto", "numpy", "infini-gram"], default="auto",
                   help="query engine (auto: infini-gram where installed, else numpy)")
    p.add_argument("--token-dtype", choices=["u8", "u16", "u32"], default=None,
                   help="token width of an index without recitation's manifest (default: "
                   "inferred from its files)")


def add_index_parser(sub: Any) -> None:
    idx = sub.add_parser("index", help="build and inspect corpus indexes (infini-gram files)")
    isub = idx.add_subparsers(dest="index_cmd", required=True)
    p = isub.add_parser("build", help="index a corpus: JSONL, a .txt folder, or kjv")
    p.add_argument("corpus", help="JSONL file or folder, folder of .txt files, or 'kjv' "
                   "(symbolic links in a folder are followed)")
    p.add_argument("dir", type=Path, help="index directory to write")
    p.add_argument("--tokenizer", metavar="MODEL", default=None,
                   help="token-level with this local model's tokenizer (default: byte-level)")
    p.add_argument("--chapters", action="store_true",
                   help="plain text: one document per chapter instead of per file")
    p.add_argument("--text-field", default="text", help="JSONL text field (default: text)")
    p.add_argument("--max-shard-mb", type=float, default=None,
                   help="largest shard in MB (default: what fits the memory available)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing index")
    p.add_argument("--workers", type=int, default=min(os.cpu_count() or 1, 8),
                   help="suffix arrays built in parallel; a corpus of >= 64 MB is cut into "
                   "this many shards (default: the CPU count, at most 8; 1: one shard)")
    p.set_defaults(func=cmd_index_build)
    p = isub.add_parser("info", help="sizes of an index (recitation's or infini-gram's)")
    p.add_argument("dir", type=Path)
    _engine(p)
    p.set_defaults(func=cmd_index_info)
    p = isub.add_parser("validate", help="the PROPME paper's validation: sampled documents, "
                        "full and 128-unit partial queries; rates should be 1.00")
    p.add_argument("dir", type=Path)
    p.add_argument("--docs", type=int, default=25)
    p.add_argument("--size", type=int, default=128, help="partial query size in units")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tokenizer", metavar="MODEL", default=None,
                   help="the model whose tokenizer a token-level index was built with")
    p.add_argument("--json", action="store_true")
    from recitation.trace.simpletrace import DEFINITIONS

    p.add_argument("--definitions", choices=DEFINITIONS, default="recitation",
                   help="SimpleTrace's definitions the queries are traced with (see trace; "
                   "default recitation)")
    _engine(p)
    p.set_defaults(func=cmd_index_validate)


def add_trace_parser(sub: Any) -> None:
    p = sub.add_parser("trace", help="SimpleTrace: trace generations to the corpus documents "
                       "they copy")
    p.add_argument("generations", type=Path, nargs="?", default=None,
                   help="JSONL of generations: text, optional id and group")
    p.add_argument("--from-run", metavar="RUN", default=None,
                   help="trace a run's stored generations instead (prefix_probe, propme)")
    p.add_argument("--field", default="continuation",
                   help="the record field holding the generation (--from-run; default: "
                   "continuation, prefix probing's; propme: generation)")
    p.add_argument("--group-field", default="group",
                   help="the record field used as group (--from-run; propme: set)")
    p.add_argument("--index", type=Path, action="append", required=True,
                   help="index directory (repeat for several)")
    p.add_argument("--model", default="scripted:none", metavar="SPEC",
                   help="the target, for its tokenizer on a token-level index")
    p.add_argument("--text-field", default="text")
    p.add_argument("--rarity", type=float, default=0.05, help="K = max(ceil(rarity L), 1)")
    p.add_argument("--max-docs", type=int, default=10, help="documents per span")
    p.add_argument("--n-span", type=int, default=60, help="'generations with an n-unit span'")
    p.add_argument("--nv-threshold", type=float, default=0.5)
    p.add_argument("--no-text-mode", action="store_true",
                   help="allow sentence ends inside spans (code, data)")
    p.add_argument("--json", action="store_true",
                   help="print the report and every generation's spans with the documents "
                   "they were found in (metadata included) as JSON, instead of the tables")
    _definitions(p, "recitation")
    p.add_argument("--runs-dir", type=Path, default=None)
    _engine(p)
    p.set_defaults(func=cmd_trace)
