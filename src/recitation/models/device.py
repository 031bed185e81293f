"""Where a local model runs: the device grammar, its resolution, and out-of-memory back-off.

One spelling everywhere (the model config's ``device``, the spec suffix ``smollm2@cuda:1``,
``--device``)::

    auto | cpu | cuda | cuda:N

``auto`` (the default) is the first CUDA device when torch sees one, else the CPU. Looking
for one imports torch only where an NVIDIA driver is present (``/dev/nvidiactl`` or
``/proc/driver/nvidia``), so a CPU machine resolves ``auto`` without loading torch.
``cuda`` / ``cuda:N`` are taken as asked; a machine without that device fails when the
weights are loaded (:func:`check_available`), with the fix in the message.

A model's identity (its cache and resume key) carries the device's kind only where it is not
the CPU (:func:`device_key`: ``{"device": "cuda"}``), so every answer cached on a CPU stays
valid and none is shared between a CPU and a GPU; the index of a GPU is not part of it
(GPUs of one machine answer alike).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator

from recitation.errors import ConfigError

log = logging.getLogger(__name__)

__all__ = ["DEVICE_FORMS", "Device", "check_available", "check_device", "cuda_available",
           "device_key", "is_cuda", "is_device", "is_out_of_memory", "resolve_device",
           "split_on_oom"]

DEVICE_FORMS = "auto, cpu, cuda, cuda:N"
_DEVICE = re.compile(r"(auto|cpu|cuda(:\d+)?)")
_DRIVER_FILES = ("/dev/nvidiactl", "/proc/driver/nvidia")


def is_device(text: str) -> bool:
    """Whether ``text`` is spelt as a device (:data:`DEVICE_FORMS`)."""
    return _DEVICE.fullmatch(text) is not None


def check_device(device: str) -> str:
    """``device`` when it is one of :data:`DEVICE_FORMS`, else a ConfigError naming them."""
    if not is_device(device):
        raise ConfigError(f"device '{device}' is not one of {DEVICE_FORMS}")
    return device


def _valid_device(v: str) -> str:
    try:
        return check_device(v)
    except ConfigError as e:  # pydantic reports a ValueError with the field's name
        raise ValueError(str(e)) from None


Device = Annotated[str, AfterValidator(_valid_device)]
"""A config field holding a device (:data:`DEVICE_FORMS`), checked when the config is made."""


def is_cuda(device: str) -> bool:
    return device == "cuda" or device.startswith("cuda:")


def cuda_available() -> bool:
    """Whether torch sees a CUDA device (torch is imported only where a driver is present)."""
    if not any(Path(p).exists() for p in _DRIVER_FILES):
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda:0`` when torch sees a CUDA device, else ``cpu``; the others as
    they are (checked)."""
    if check_device(device) != "auto":
        return device
    return "cuda:0" if cuda_available() else "cpu"


def check_available(device: str) -> None:
    """A ConfigError, with the fix, when ``device`` is a CUDA device torch does not see."""
    if not is_cuda(device):
        return
    import torch

    if not torch.cuda.is_available():
        build = torch.version.cuda or "a CPU-only build"
        raise ConfigError(f"device '{device}': torch ({torch.__version__}, {build}) sees no "
                          f"CUDA device; use --device cpu (or auto), or install a CUDA build "
                          f"of torch on a machine with an NVIDIA GPU")
    index = int(device.partition(":")[2] or 0)
    if index >= torch.cuda.device_count():
        raise ConfigError(f"device '{device}': torch sees {torch.cuda.device_count()} CUDA "
                          f"device(s) (cuda:0..cuda:{torch.cuda.device_count() - 1}); name "
                          f"one of them, or use --device auto")


def device_key(device: str) -> dict[str, str]:
    """What a model's identity adds for a resolved ``device``: nothing for the CPU (the keys
    every cache and run was written under stay valid), ``{"device": "cuda"}`` on a GPU."""
    return {"device": "cuda"} if is_cuda(check_device(device)) else {}


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is torch's out-of-memory error (CUDA's, or the allocator's message)."""
    oom = _oom_type()
    if oom is not None and isinstance(exc, oom):
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


def _oom_type() -> type[BaseException] | None:
    try:
        import torch
    except ImportError:
        return None
    found: type[BaseException] | None = getattr(torch, "OutOfMemoryError", None)
    return found


def _free_cached() -> None:
    try:
        import torch
    except ImportError:
        return
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


T = TypeVar("T")
R = TypeVar("R")


def split_on_oom(run: Callable[[list[T]], list[R]], items: Sequence[T],
                 on_split: Callable[[int], Any] | None = None) -> list[R]:
    """``run(items)``; when it runs out of memory, the same on each half (recursively), so a
    batch too large for the device is answered in smaller ones instead of failing the run.
    ``on_split(n)`` is told the size that failed. A single item that does not fit fails with
    torch's error."""
    items = list(items)
    try:
        return run(items)
    except Exception as exc:  # noqa: BLE001 - only out-of-memory is retried
        if not is_out_of_memory(exc) or len(items) <= 1:
            raise
    _free_cached()
    log.warning("out of memory on a batch of %d; retrying it in halves", len(items))
    if on_split is not None:
        on_split(len(items))
    half = len(items) // 2
    return (split_on_oom(run, items[:half], on_split)
            + split_on_oom(run, items[half:], on_split))
