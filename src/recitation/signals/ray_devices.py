"""Where the Ray actors of :mod:`recitation.signals.on_ray` run: the driver decides one device
for all of them from the model spec's device and the GPUs the cluster declares; each actor
checks, where it starts, that it can use what it was given.

======================  =================================================================
spec's device           the actors
======================  =================================================================
``cpu``                 one CPU each, no GPU
``cuda`` / ``cuda:N``   one GPU each (one model per GPU: as many actors as the cluster has
                        GPUs at most), the model on ``cuda`` (Ray sets each actor's
                        ``CUDA_VISIBLE_DEVICES`` to its GPU, so ``cuda:N``'s index means
                        nothing there); a cluster that declares no GPU, or an actor whose
                        torch sees none, fails the run with the fix in the message
``auto`` (the default)  as ``cuda`` where the cluster declares GPUs, else as ``cpu``; an
                        actor whose torch sees no CUDA device falls back to the CPU, and the
                        driver logs why
======================  =================================================================

The store keeps each model identity's answers in a folder of their own, and the identity
carries the device's kind (:func:`~recitation.models.device.device_key`): an actor that fell
back writes under the CPU's identity, never into the GPU answers' folder, and the driver
says how many shards were answered where.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

from recitation.errors import ConfigError
from recitation.models.config import parse_model_spec, split_device, with_device
from recitation.models.device import check_available, is_cuda
from recitation.models.registry import backend_for

log = logging.getLogger(__name__)

__all__ = ["ActorDevice", "RayDevices", "actor_device", "plan_devices", "visible_gpus"]


@dataclass(frozen=True)
class ActorDevice:
    """What one actor loads and the identity its answers are stored under."""

    spec: str
    identity: dict[str, Any]


@dataclass(frozen=True)
class RayDevices:
    """The driver's plan: what every actor is asked to run on, and what it falls back to
    (under ``auto`` only)."""

    device: ActorDevice
    fallback: ActorDevice | None
    gpus: int  # GPUs each actor asks Ray for (0 or 1)
    cluster_gpus: int  # GPUs the cluster declares

    def actors(self, workers: int, shards: int) -> int:
        """How many actors: ``workers``, no more than the shards, nor than the GPUs when
        each takes one."""
        most = min(workers, shards)
        return max(1, min(most, self.cluster_gpus) if self.gpus else most)


def _on(spec: str, device: str) -> ActorDevice:
    """``spec`` (a local model, its device suffix removed) on ``device``."""
    return ActorDevice(with_device(spec, device), backend_for(with_device(spec, device))
                       .answer_identity())


def plan_devices(spec: str, cluster_gpus: float) -> RayDevices:
    """The actors' device for ``spec`` on a cluster declaring ``cluster_gpus`` GPUs."""
    gpus = int(cluster_gpus)
    cfg = parse_model_spec(spec)
    if cfg["backend"] != "local":  # a served model: the actors only call its server
        return RayDevices(ActorDevice(spec, backend_for(spec).answer_identity()), None, 0,
                          gpus)
    named = cfg.get("device") or "auto"
    bare = spec[: -len(named) - 1] if split_device(spec)[1] == named else spec
    if is_cuda(named) and gpus < 1:
        raise ConfigError(f"device '{named}': the Ray cluster declares no GPU "
                          f"(ray.cluster_resources() has no 'GPU'); start its nodes with "
                          f"their GPUs (`ray start --num-gpus N`), or use --device cpu "
                          f"(or auto, which runs on GPUs only where the cluster has them)")
    if named == "cpu" or (named == "auto" and gpus < 1):
        return RayDevices(_on(bare, "cpu"), None, 0, gpus)
    fallback = _on(bare, "cpu") if named == "auto" else None
    return RayDevices(_on(bare, "cuda"), fallback, 1, gpus)


def visible_gpus() -> str:
    """The GPUs Ray gave this process (``CUDA_VISIBLE_DEVICES``; empty where none)."""
    return os.environ.get("CUDA_VISIBLE_DEVICES", "")


def actor_device(device: ActorDevice, fallback: ActorDevice | None) -> tuple[ActorDevice, str]:
    """In an actor: ``device`` when this process can use it, else ``fallback`` (under
    ``auto``) with the reason, else a ConfigError naming the GPU Ray gave and the fix.
    Returns the device used and the reason for a fallback (empty where none)."""
    wanted = parse_model_spec(device.spec).get("device") or "auto"
    if not is_cuda(wanted):
        return device, ""
    try:
        check_available(wanted)
    except ConfigError as e:
        where = (f"a Ray worker given GPU {visible_gpus()!r} (CUDA_VISIBLE_DEVICES) on "
                 f"{os.uname().nodename}")
        if fallback is None:
            raise ConfigError(f"{where} cannot use it: {e}") from None
        # the reason without check_available's fix (``auto`` is what falls back)
        reason = f"{where} cannot use it, so it scores on the CPU: {str(e).split('; ')[0]}"
        log.warning("%s", reason)
        return fallback, reason
    return device, ""
