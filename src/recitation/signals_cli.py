"""``recitation signals``: the token signals of texts under a model, computed once into a
store (:mod:`recitation.signals.store`) that ``recitation detect --signals`` reads."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

__all__ = ["add_signals_parser"]


def add_signals_parser(sub: Any) -> None:
    p = sub.add_parser("signals", help="per-token signals of texts under a model, computed "
                       "once into a Parquet store (detect --signals reads it)")
    p.add_argument("sources", nargs="+", metavar="SRC",
                   help="texts, as detect's --members: PATH.jsonl | PATH.txt | book:PATH | "
                        "kjv:... | builtin:NAME")
    p.add_argument("--model", default="smollm2", metavar="SPEC",
                   help="model spec, backend:model[@url] (default: the embedded SmolLM2)")
    from recitation.models.config import add_device_option

    add_device_option(p)  # with --ray, cuda gives each actor a GPU of its own
    p.add_argument("--store", type=Path, default=None, metavar="DIR",
                   help="the store folder (default: signals/ in the cache folder)")
    p.add_argument("--limit", type=int, default=None, help="texts per source")
    p.add_argument("--passage-words", type=int, default=250,
                   help="words per passage of a book source")
    p.add_argument("--shard", type=int, default=None, metavar="N",
                   help="texts per shard (default 256)")
    p.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                   help="score on a Ray cluster: its address (host:port, or 'auto' for the "
                        "one `ray start` began here), or none for a cluster of this "
                        "command's own on 127.0.0.1; the store must be on a file system "
                        "every worker reaches")
    p.add_argument("--workers", type=int, default=2,
                   help="with --ray: actors, each loading the model once (default 2)")
    p.set_defaults(func=cmd_signals)


def default_store() -> Path:
    from recitation._cachedir import cache_dir

    return cache_dir() / "signals"


def cmd_signals(args: argparse.Namespace) -> int:
    from recitation.detect.samples import load_samples
    from recitation.models.registry import backend_for
    from recitation.signals.compute import SHARD_TEXTS, score_through
    from recitation.signals.store import SignalStore

    texts = [s.text for src in args.sources for s in load_samples(
        src, "member", limit=args.limit, passage_words=args.passage_words)]
    if args.ray:
        from recitation.signals.on_ray import score_on_ray

        root = args.store or default_store()
        done = score_on_ray(root, args.model, texts, address=args.ray, workers=args.workers,
                            shard=args.shard or SHARD_TEXTS)
        return _say(done, root)
    model = backend_for(args.model)  # main wrote --device into it (apply_device)
    store = SignalStore(args.store or default_store(), model.answer_identity())

    async def run() -> Any:
        try:
            return (await score_through(store, model, texts, read=False,
                                        shard=args.shard or SHARD_TEXTS))[1]
        finally:
            await model.aclose()

    return _say(asyncio.run(run()), store.root)


def _say(done: Any, root: Path) -> int:
    from recitation.runs.console import console

    console.print(f"{done.texts} texts: {done.scored} scored in {done.shards_written} "
                  f"shard(s), {done.texts - done.scored} already in the store; {root}")
    for device, gpus, shards in done.placements:
        given = f"CUDA_VISIBLE_DEVICES={gpus}" if gpus else "no GPU"
        console.print(f"  on Ray: {shards} shard(s) on {device} ({given})")
    return 0
