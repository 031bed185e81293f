"""Token signals on a Ray cluster: the texts a store lacks, in shards, scored by Ray Data
actors that each load the model once; each actor writes its shard into the store as soon as
it is scored, so a killed job resumed scores only the shards that are missing, and the
numbers are those of the in-process path (the same shards, scored the same way).

The store folder must be reachable from every worker at the same path (one machine, or a
shared file system). Every worker needs recitation installed with the model's extras; the
driver's ``RECITATION_*`` variables (model cache, threads) are passed on to the workers.
``ray`` is the ``ray`` extra (``pip install 'recitation[ray]'``).

Each actor takes one GPU where the model's device is CUDA (or ``auto`` on a cluster that
declares GPUs), one CPU otherwise: :mod:`recitation.signals.ray_devices`. An actor that dies
while it starts is replaced (:data:`INIT_DEATHS` in a row at most), and a pipeline an
actor's death failed is run again on the shards not yet written (:data:`ATTEMPTS`): on a
loaded machine an actor can die before its constructor ran ("cancelled before it started
running"), and Ray Data's default failed the whole run on the first such death. Before each
further run the driver leaves the cluster, waits (:data:`PAUSES`) and joins it again: in a
suite beside other work, every actor of three back-to-back runs (one second in all) died so,
each within 0.1 s of its start, while Ray Data saw 0 of the cluster's CPUs as its own.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from recitation.errors import ConfigError, require
from recitation.models.config import is_loopback
from recitation.models.registry import backend_for
from recitation.signals.compute import SHARD_TEXTS, Computed
from recitation.signals.ray_devices import (
    ActorDevice,
    RayDevices,
    actor_device,
    plan_devices,
    visible_gpus,
)
from recitation.signals.store import SignalStore

log = logging.getLogger(__name__)

__all__ = ["ATTEMPTS", "INIT_DEATHS", "LOCAL", "PAUSES", "score_on_ray"]

LOCAL = "local"
"""``--ray`` without an address: a Ray cluster of this process's own, on 127.0.0.1."""

INIT_DEATHS = 3
"""Actors that may die in a row while starting before Ray Data fails the pipeline (each is
replaced by a new one); Ray's default, 0, failed a run on the first."""

PAUSES = (10.0, 30.0, 90.0)
"""Seconds the driver waits, out of the cluster, before each further run of a pipeline that an
actor's death failed (then it joins again: a new connection, a new Ray Data executor)."""

ATTEMPTS = len(PAUSES) + 1
"""Runs of the pipeline, each on the shards not yet written, when an actor's death failed
the one before."""


class ShardScorer:
    """A Ray Data actor: the model loaded once, on the device the driver chose (or, under
    ``auto``, the CPU where this worker cannot use the GPU Ray gave it:
    :mod:`recitation.signals.ray_devices`); each row a shard of texts, scored and written
    into the store; each output row says where it was scored."""

    def __init__(self, device: ActorDevice, root: str, fallback: ActorDevice | None) -> None:
        self.gpus, self.fallback = visible_gpus(), ""
        self.error: ConfigError | None = None
        try:
            self._load(device, root, fallback)
        except ConfigError as e:  # answered for each shard, and raised by the driver: an
            self.error = e  # error raised here is taken for a crash (the actor replaced),
            # and one raised in a task reaches the driver as text only
        # one event loop for the actor's life: its worker thread (where a local model runs)
        # is reused shard after shard; a loop per shard (asyncio.run) started a new thread
        # each time, and the actor's memory grew with every shard (measured: 1.37 GB after
        # 2 shards, 1.99 GB after 8), as the in-process path's does not
        self.loop = asyncio.new_event_loop()

    def _load(self, device: ActorDevice, root: str, fallback: ActorDevice | None) -> None:
        used, self.fallback = actor_device(device, fallback)
        self.model = backend_for(used.spec)
        found = self.model.answer_identity()
        if found != used.identity:  # other weights or code here: never mix them into the folder
            raise ConfigError(f"this Ray worker's {used.spec} is not the driver's: {found} "
                              f"against {used.identity}; install the same versions everywhere")
        self.device = str(getattr(self.model, "device", "server"))
        self.store = SignalStore(Path(root), used.identity)

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        if self.error is not None:
            n = len(batch["index"])
            return {"index": list(batch["index"]), "shard": [""] * n, "texts": [0] * n,
                    "device": [""] * n, "gpus": [self.gpus] * n, "fallback": [""] * n,
                    "error": [str(self.error)] * n}
        shards, sizes = [], []
        for texts in batch["texts"]:
            part = [str(t) for t in texts]
            scores = self.loop.run_until_complete(self.model.score(part))
            shards.append(self.store.write(part, scores).name)
            sizes.append(len(part))
        n = len(shards)
        return {"index": list(batch["index"]), "shard": shards, "texts": sizes,
                "device": [self.device] * n, "gpus": [self.gpus] * n,
                "fallback": [self.fallback] * n, "error": [""] * n}


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
    ``shard`` texts over ``workers`` actors (one CPU each, and one GPU each where the spec's
    device is CUDA, or ``auto`` on a cluster with GPUs); returns what was done."""
    _ray_environment(address)
    ray = require("ray", "scoring on a Ray cluster (pip install 'recitation[ray]')")
    _init(ray, address)
    try:
        plan = plan_devices(spec, float(ray.cluster_resources().get("GPU", 0)))
        todo = SignalStore(root, plan.device.identity).missing(texts)
        parts = [todo[i : i + shard] for i in range(0, len(todo), shard)]
        where = (_run(ray, plan, Path(root), parts, workers, progress,
                      rejoin=lambda pause: _rejoin(ray, address, pause))
                 if parts else Counter())
    finally:
        ray.shutdown()
    _tell_where(where, plan, spec)
    return Computed(len(texts), len(todo), len(parts),
                    tuple((d, g, n) for (d, g, _), n in sorted(where.items())))


def _rejoin(ray: Any, address: str, pause: float) -> None:
    """Leave the cluster (``LOCAL``: stop it), wait ``pause`` seconds, join it again."""
    ray.shutdown()
    time.sleep(pause)
    _init(ray, address)


def _run(ray: Any, plan: RayDevices, root: Path, parts: list[list[str]], workers: int,
         progress: Callable[[int, int], None] | None,
         rejoin: Callable[[float], None] | None = None) -> Counter[tuple[str, str, str]]:
    """The shards on the actors; the shards each (device, GPUs given, fallback reason)
    scored. A pipeline that fails because an actor died is run again on the shards not
    yet written (:data:`ATTEMPTS` in all), each time after ``rejoin(pause)``
    (:data:`PAUSES`); an error of the setup is raised as it is."""
    total, done = sum(len(p) for p in parts), 0
    where: Counter[tuple[str, str, str]] = Counter()
    written: set[int] = set()
    errors: list[str] = []  # a worker's setup error: each of its shards answers it
    for attempt in range(1, ATTEMPTS + 1):
        left = [i for i in range(len(parts)) if i not in written]
        try:
            for row in _pipeline(ray, plan, root, parts, left, workers).iter_rows():
                if row["error"]:  # raised once the pipeline has ended: one stopped in the
                    errors.append(str(row["error"]))  # middle crashed ray.shutdown()
                    continue
                written.add(int(row["index"]))
                where[(str(row["device"]), str(row["gpus"]), str(row["fallback"]))] += 1
                done += int(row["texts"])
                if progress:
                    progress(done, total)
            if errors:
                raise ConfigError(errors[0])
            return where
        except Exception as e:  # noqa: BLE001 - only an actor's death is retried
            if isinstance(e, ConfigError) or attempt == ATTEMPTS or not _actor_died(e):
                raise
            pause = PAUSES[attempt - 1]
            log.warning("Ray: an actor died (%s); running the %d shard(s) not yet written "
                        "again in %.0f s, on a new connection (attempt %d of %d)",
                        _first_line(e), len(parts) - len(written), pause, attempt + 1,
                        ATTEMPTS)
            if rejoin is not None:
                rejoin(pause)
    return where  # not reached: the last attempt returns or raises


def _pipeline(ray: Any, plan: RayDevices, root: Path, parts: list[list[str]],
              left: list[int], workers: int) -> Any:
    """The Ray Data pipeline over the shards ``left`` (their indices in ``parts``)."""
    import ray.data

    # an actor that dies while it starts (before its constructor ran: a worker process
    # lost under load) is replaced up to INIT_DEATHS times in a row (Ray's default: 0,
    # the first such death failed the run)
    ray.data.DataContext.get_current().max_consecutive_actor_init_deaths = INIT_DEATHS
    ds = ray.data.from_items([{"index": i, "texts": parts[i]} for i in left],
                             override_num_blocks=len(left))
    pool = ray.data.ActorPoolStrategy(size=plan.actors(workers, len(left)),
                                      max_tasks_in_flight_per_actor=1)
    # one GPU each, or one CPU (Ray warns that asking for both is experimental)
    need = {"num_gpus": plan.gpus} if plan.gpus else {"num_cpus": 1}
    return ds.map_batches(ShardScorer, batch_size=1, compute=pool, **need,
                          fn_constructor_kwargs={"device": plan.device,
                                                 "root": str(root.resolve()),
                                                 "fallback": plan.fallback})


def _actor_died(exc: BaseException) -> bool:
    """Whether an actor's death (Ray's RayActorError, however wrapped) failed the run."""
    from ray.exceptions import RayActorError

    e: BaseException | None = exc
    for _ in range(16):
        if e is None:
            return False
        if isinstance(e, RayActorError):
            return True
        e = e.__cause__ or e.__context__
    return False


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


def _tell_where(where: Counter[tuple[str, str, str]], plan: RayDevices, spec: str) -> None:
    """Log the shards actors scored on the CPU because they could not use their GPU (stored
    under the CPU's identity: never among GPU answers), and GPU answers that this process's
    own model (``auto`` resolved here) would not read."""
    fell = {reason: n for (_, _, reason), n in where.items() if reason}
    for reason, n in fell.items():
        log.warning("Ray: %d shard(s) scored on the CPU, not a GPU: %s", n, reason)
    if fell and plan.fallback is not None:
        log.warning("Ray: %d of %d shard(s) are stored as %s's answers (the CPU's model "
                    "identity), apart from GPU answers: a run on the CPU reads them, a run "
                    "on a GPU scores them again", sum(fell.values()), sum(where.values()),
                    plan.fallback.spec)
    on_gpu = sum(n for (_, _, reason), n in where.items() if not reason) if plan.gpus else 0
    if on_gpu and backend_for(spec).answer_identity() != plan.device.identity:
        log.warning("Ray: %d shard(s) were answered on GPUs (%s), but '%s' runs on the CPU "
                    "in this process: a run here (detect --signals) would not read them; "
                    "name the device (%s, or --device cuda) where the store is read",
                    on_gpu, plan.device.spec, spec, plan.device.spec)
