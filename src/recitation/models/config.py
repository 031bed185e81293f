"""How a model is named and configured: :class:`ModelConfig` and the one spec grammar.

Every command names a model the same way (``recitation extract --target``, ``--helper``,
``--judge``; ``recitation detect --model`` and ``--reference-model``; ``recitation demo
--model``)::

    backend:model[@base_url]      (an API backend)
    [local:]model[@device]         (a local model: device auto | cpu | cuda | cuda:N)

- ``backend`` is a name of the backend registry :data:`BACKEND_CLASSES` (``local``,
  ``openai``, ``anthropic``, ``scripted``, and any backend added there);
- a bare name or a path (``smollm2``, ``./my-model``, ``C:\\models\\x.gguf``) means local;
- ``@base_url`` points an API backend at an OpenAI- or Anthropic-compatible endpoint, e.g.
  ``openai:llama3@http://localhost:8000/v1``;
- ``@device`` runs a local model on that device (``smollm2@cuda:1``,
  ``organism:quick:epoch2@cpu``; :mod:`recitation.models.device`): only a suffix spelt as a
  device is one, so a path holding ``@`` (``/cache/org@rev/model``) is still a path. Where
  it is left out the config's ``device`` applies (``auto``, or a command's ``--device``).

:func:`parse_model_spec` is the only parser of that grammar. The model config lives here, with
the models, so that ``recitation.models`` needs nothing from ``recitation.runs``.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Literal
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from recitation.errors import ConfigError
from recitation.models.device import DEVICE_FORMS, Device, check_device, is_cuda, is_device
from recitation.registry import Registry, paths

BACKEND_CLASSES: dict[str, str] = {
    "local": "recitation.models.local:LocalModel",
    "openai": "recitation.models.openai_backend:OpenAIModel",
    "anthropic": "recitation.models.anthropic_backend:AnthropicModel",
    "scripted": "recitation.models.scripted:ScriptedModel",
}
"""The backend registry: name -> ``module:Class`` of a :class:`~recitation.models.base.Model`
whose ``from_config`` builds it (imported only when a model of it is built or its
capabilities are asked for). A new backend is one module and one line here: config
validation, the spec grammar, CLI choices, the audit's plan and the docs read this; a backend
of another package is a ``recitation.backends`` entry point (:data:`BACKENDS`)."""

BACKENDS: Registry[str] = paths("backend", BACKEND_CLASSES)
""":data:`BACKEND_CLASSES`, then the ``recitation.backends`` entry points of other packages
(:mod:`recitation.registry`)."""


LOCAL_DTYPES = ("float32", "bfloat16")
"""The local backend's weight and activation types: float32 (the default: every published
figure here) or bfloat16 (2.6x the scoring and 1.8x the generation speed on a 2-core CPU
with AVX-512 BF16, 4.7x and 2.6x slower on one without; log-probabilities taken in float32
from the bfloat16 logits; docs/benchmarks.md)."""


DTYPE_CHOICES = ("auto", *LOCAL_DTYPES)
"""What a config or ``--dtype`` may say: ``auto`` is float32 on the CPU (the dtype of every
published CPU figure) and bfloat16 on a GPU (:func:`resolve_dtype`)."""


def check_dtype(dtype: str, *, auto: bool = False) -> str:
    """``dtype`` when the local backend has it (``auto`` too where ``auto``), else a
    ConfigError naming the choices."""
    if dtype not in (DTYPE_CHOICES if auto else LOCAL_DTYPES):
        also = " (or auto: float32 on the CPU, bfloat16 on a GPU)" if auto else ""
        raise ConfigError(f"dtype '{dtype}' is not one of {', '.join(LOCAL_DTYPES)}{also}")
    return dtype


def resolve_dtype(dtype: str, device: str) -> str:
    """``auto`` on a resolved ``device``: bfloat16 on CUDA, float32 on the CPU; else
    ``dtype`` (checked)."""
    if check_dtype(dtype, auto=True) != "auto":
        return dtype
    return "bfloat16" if is_cuda(device) else "float32"


def dtype_key(dtype: str) -> dict[str, str]:
    """What a model's identity adds for ``dtype``: nothing for float32 (the keys every cache
    and saved unit were written under stay valid), else ``{"dtype": dtype}``."""
    return {} if check_dtype(dtype) == "float32" else {"dtype": dtype}


def backend_names() -> tuple[str, ...]:
    """Every registered backend name, in registry order (read at call time)."""
    return tuple(BACKENDS.names())


def check_backend(name: str) -> str:
    """``name`` when registered, else a ConfigError with the choices (and a "did you mean")."""
    return BACKENDS.check(name)

_SECRET_FIELDS = {"api_key", "apikey", "key", "token", "secret", "password"}


class ModelConfig(BaseModel):
    """One model: its backend, name, endpoint, key variable and call limits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: str = "local"  # a name of BACKEND_CLASSES
    model: str = "smollm2"
    base_url: str | None = None
    # NAME of the variable holding the key (default OPENAI_API_KEY / ANTHROPIC_API_KEY);
    # false for servers that need no key (e.g. `recitation serve`).
    api_key_env: str | Literal[False] | None = None
    timeout: float = Field(60.0, gt=0)
    concurrency: int = Field(4, ge=1)
    batch_size: int = Field(8, ge=1)
    requests_per_minute: float | None = Field(None, gt=0)
    tokens_per_minute: float | None = Field(None, gt=0)
    max_attempts: int = Field(4, ge=1)
    retry_base_delay: float = Field(0.5, ge=0)
    # send a request that timed out again? None: unless its server is on this machine, which
    # is still computing it (recitation.models.endpoint); true where that server abandons it
    resend_timeouts: bool | None = None
    dtype: str = "auto"  # the local backend's weights (DTYPE_CHOICES); others take the server's
    device: Device = "auto"  # where a local model runs (models.device.DEVICE_FORMS)

    @field_validator("backend")
    @classmethod
    def _registered(cls, v: str) -> str:
        try:
            return check_backend(v)
        except ConfigError as e:
            raise ValueError(str(e)) from None

    @model_validator(mode="after")
    def _dtype(self) -> ModelConfig:
        try:
            check_dtype(self.dtype, auto=True)
        except ConfigError as e:
            raise ValueError(str(e)) from None
        if self.dtype not in ("auto", "float32") and self.backend != "local":
            raise ValueError(f"dtype '{self.dtype}' is for the local backend only (a served "
                             f"model's precision is the server's): drop dtype for "
                             f"'{self.backend}'")
        if self.device != "auto" and self.backend != "local":
            raise ValueError(f"device '{self.device}' is for the local backend only (a served "
                             f"model runs where its server put it): drop device for "
                             f"'{self.backend}'")
        return self

    @model_validator(mode="before")
    @classmethod
    def _no_secrets(cls, data: Any) -> Any:
        if isinstance(data, dict):
            bad = sorted(k for k in data if str(k).lower() in _SECRET_FIELDS)
            if bad:
                raise ValueError(
                    f"'{bad[0]}' is not allowed: API keys are read from environment variables "
                    "only; set 'api_key_env' to the variable's name"
                )
        return data


def spec_help() -> str:
    return ("backend:model[@url], backend one of " + ", ".join(backend_names())
            + f"; a bare name or path is a local model, [local:]model[@device] with device "
              f"one of {DEVICE_FORMS}")


def split_device(model: str) -> tuple[str, str | None]:
    """A local model's name and the device its spec names (``smollm2@cuda:1`` ->
    ``("smollm2", "cuda:1")``); a suffix not spelt as a device is part of the name."""
    name, at, device = model.rpartition("@")
    return (name, device) if at and name and is_device(device) else (model, None)


DEVICE_HELP = ("where local models run: auto (the default: the first CUDA GPU torch sees, "
               "else the CPU), cpu, cuda, cuda:N; the same as MODEL@DEVICE in a model spec. "
               "On a GPU a local model computes in bfloat16 unless its dtype says otherwise")

MODEL_ARGUMENTS = ("model", "target", "helper", "judge", "reference_model", "null_model")
"""The command-line options that name a model; ``--device`` applies to the local ones."""


def add_device_option(parser: Any) -> None:
    """``--device`` on a command that takes local models (:func:`apply_device`)."""
    parser.add_argument("--device", default=None, metavar="DEVICE", help=DEVICE_HELP)


def apply_device(args: Any, default_model: str = "smollm2") -> None:
    """A command's ``--device`` written into each local model spec among its options
    (:data:`MODEL_ARGUMENTS`; an empty ``--model`` list means ``default_model``), so the
    device travels with the spec (to Ray workers and run configs). An error where the
    command names models but none of them is local, or a spec names another device."""
    device = getattr(args, "device", None)
    if device is None:
        return
    check_device(device)
    named, local = 0, 0
    for name in MODEL_ARGUMENTS:
        value = getattr(args, name, None)
        if name == "model" and value == []:
            value = [default_model]
        specs = value if isinstance(value, list) else [value] if isinstance(value, str) else []
        out = []
        for spec in specs:
            named += 1
            if parse_model_spec(spec)["backend"] == "local":
                local += 1
                spec = with_device(spec, device)
            out.append(spec)
        if specs:
            setattr(args, name, out if isinstance(value, list) else out[0])
    if named and not local and device != "auto":
        raise ConfigError(f"--device {device} is for local models, and this command names "
                          f"none (an API model runs where its server put it): drop --device")


def with_device(spec: str, device: str | None) -> str:
    """``spec`` run on ``device`` (a command's ``--device``): a local spec without a device
    gets ``@device``; one that names another device is an error; so is a device other than
    ``auto`` for an API model (its server decides where it runs). ``None`` leaves the spec as
    it is."""
    if device is None:
        return spec
    check_device(device)
    if parse_model_spec(spec)["backend"] != "local":
        if device != "auto":
            raise ConfigError(f"--device {device} is for local models; '{spec}' runs where "
                              f"its server put it: drop --device")
        return spec
    named = split_device(spec)[1]
    if named is not None and named != device:
        raise ConfigError(f"model '{spec}' names device '{named}' but --device says "
                          f"'{device}'; give the device once")
    return spec if named is not None else f"{spec}@{device}"


def parse_model_spec(spec: str, key_env: str | None = None) -> dict[str, Any]:
    """``backend:model[@base_url]`` -> :class:`ModelConfig` fields.

    Bare names and paths are local models (a Windows drive letter is not a backend); a local
    model gets one worker and batches of 8. ``key_env`` names the variable holding the key.
    """
    backend, sep, rest = spec.partition(":")
    if not sep or backend not in BACKENDS:
        backend, rest = "local", spec
    model, at, base_url = rest.partition("@") if backend != "local" else (rest, "", "")
    device = None
    if backend == "local":
        model, device = split_device(model)
    if not model:
        raise ConfigError(f"model spec '{spec}': no model name ({spec_help()})")
    if at and not base_url:
        raise ConfigError(f"model spec '{spec}': nothing after '@' ({spec_help()})")
    cfg: dict[str, Any] = {"backend": backend, "model": model}
    if base_url:
        cfg["base_url"] = base_url
    if key_env:
        cfg["api_key_env"] = key_env
    if device is not None:
        cfg["device"] = device
    if backend == "local":
        cfg |= {"concurrency": 1, "batch_size": 8}
    return cfg


def spec_backend(spec: str) -> str | None:
    """The backend a spec names explicitly (``openai:...``), or None for a bare name/path."""
    backend, sep, _ = spec.partition(":")
    return backend if sep and backend in BACKENDS else None


def resolve_model_spec(spec: str, *, backend: str | None = None, base_url: str | None = None,
                       key_env: str | None = None, flag: str = "--model") -> dict[str, Any]:
    """:func:`parse_model_spec` plus the deprecated ``--backend`` / ``--base-url`` aliases.

    ``--model gpt-4o-mini --backend openai`` means ``--model openai:gpt-4o-mini``; an alias
    that contradicts the spec (``--model anthropic:x --backend openai``) is an error.
    """
    named = spec_backend(spec)
    if backend is not None and named is None:
        check_backend(backend)
        spec = f"{backend}:{spec}"
    elif backend is not None and backend != named:
        raise ConfigError(f"{flag} '{spec}' names backend '{named}' but the deprecated "
                          f"backend option says '{backend}'; use only {flag} {SPEC_FORM}")
    cfg = parse_model_spec(spec, key_env)
    if base_url is not None:
        if cfg.get("base_url", base_url) != base_url:
            raise ConfigError(f"{flag} '{spec}' names endpoint '{cfg['base_url']}' but the "
                              f"deprecated --base-url says '{base_url}'")
        cfg["base_url"] = base_url
    return cfg


SPEC_FORM = "backend:model[@url]"


def is_loopback(url: str) -> bool:
    """True when the URL's host is this machine (localhost or a loopback address)."""
    host = urlparse(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
