"""Token signals on a Ray cluster: the texts a store lacks, in shards, scored by Ray Data
actors that each load the model once; each actor writes its shard into the store as soon as
it is scored, so a killed job resumed scores only the shards that are missing, and the
numbers are those of the in-process path (the same shards, scored the same way).

The store folder must be reachable from every worker at the same path (one machine, or a
shared file system). Every worker needs recitation installed with the model's extras; the
driver's ``RECITATION_*`` variables (model cache, threads) are passed on to the workers.
``ray`` is the ``ray`` extra (``pip install 'recitation[ray]'``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from recitation.errors import ConfigError, require
from recitation.models.config import is_loopback
from recitation.models.registry import backend_for
from recitation.signals.compute import SHARD_TEXTS, Computed
from recitation.signals.store import SignalStore

__all__ = ["LOCAL", "score_on_ray"]

LOCAL = "local"
"""``--ray`` without an address: a Ray cluster of this process's own, on 127.0.0.1."""


class ShardScorer:
    """A Ray Data actor: the model loaded once; each row a shard of texts, scored and
    written into the store."""

    def __init__(self, spec: str, root: str, identity: dict[str, Any]) -> None:
        self.model = backend_for(spec)
        found = self.model.answer_identity()
        if found != identity:  # other weights or code here: never mix them into the folder
            raise ConfigError(f"this Ray worker's {spec} is not the driver's: {found} "
                              f"against {identity}; install the same versions everywhere")
        self.store = SignalStore(Path(root), identity)
        # one event loop for the actor's life: its worker thread (where a local model runs)
        # is reused shard after shard; a loop per shard (asyncio.run) started a new thread
        # each time, and the actor's memory grew with every shard (measured: 1.37 GB after
        # 2 shards, 1.99 GB after 8), as the in-process path's does not
        self.loop = asyncio.new_event_loop()

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        shards, sizes = [], []
        for texts in batch["texts"]:
            part = [str(t) for t in texts]
            scores = self.loop.run_until_complete(self.model.score(part))
            shards.append(self.store.write(part, scores).name)
            sizes.append(len(part))
        return {"shard": shards, "texts": sizes}


def _ray_environment(address: str) -> None:
    """What Ray reads from the environment when it is imported: for a cluster of our own,
    every port on 127.0.0.1 (measured: only with this variable); for a cluster with token
    authentication (Ray's default), the token `ray start` wrote here is sent (harmless to a
    cluster without it)."""
    if address == LOCAL:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    elif (Path.home() / ".ray" / "auth_token").exists():
        os.environ.setdefault("RAY_AUTH_MODE", "token")


def _init(ray: Any, address: str) -> None:
    """Join the cluster at ``address``, or (``LOCAL``) start one bound to 127.0.0.1."""
    env = {k: v for k, v in os.environ.items() if k.startswith("RECITATION_")}
    env.setdefault("RECITATION_THREADS", "1")  # one CPU per actor: one torch thread
    kwargs: dict[str, Any] = {"runtime_env": {"env_vars": env}, "log_to_driver": False}
    if address == LOCAL:
        kwargs |= {"_node_ip_address": "127.0.0.1", "include_dashboard": False}
    else:
        kwargs["address"] = address
        host = address.split("://")[-1]
        if is_loopback(f"http://{host}"):
            kwargs["_node_ip_address"] = "127.0.0.1"
    ray.init(**kwargs)


def score_on_ray(root: Path, spec: str, texts: list[str], *, address: str = LOCAL,
                 workers: int = 2, shard: int = SHARD_TEXTS,
                 progress: Callable[[int, int], None] | None = None) -> Computed:
    """Score the texts the store under ``root`` lacks for ``spec`` on Ray: shards of
    ``shard`` texts over ``workers`` actors (one CPU each); returns what was done."""
    _ray_environment(address)
    ray = require("ray", "scoring on a Ray cluster (pip install 'recitation[ray]')")
    identity = backend_for(spec).answer_identity()
    store = SignalStore(root, identity)
    todo = store.missing(texts)
    parts = [todo[i : i + shard] for i in range(0, len(todo), shard)]
    if parts:
        _init(ray, address)
        try:
            import ray.data

            ds = ray.data.from_items([{"texts": p} for p in parts],
                                     override_num_blocks=len(parts))
            done = 0
            for row in ds.map_batches(
                    ShardScorer, batch_size=1, concurrency=max(1, min(workers, len(parts))),
                    num_cpus=1, fn_constructor_kwargs={
                        "spec": spec, "root": str(Path(root).resolve()),
                        "identity": identity}).iter_rows():
                done += int(row["texts"])
                if progress:
                    progress(done, len(todo))
        finally:
            ray.shutdown()
    return Computed(len(texts), len(todo), len(parts))
