"""A method family's own typed options, given on the command line as ``FAMILY.key=value``.

A family (a plug-in's above all) declares its options as a pydantic model on its methods'
metadata (:attr:`recitation.methods.MethodInfo.option_model`); ``recitation detect
--detector-option FAMILY.key=value`` (and ``recitation audit`` the same) gives them, the
detect job's ``detector_options`` holds them (family -> {key: value}, validated here), and the
family's runner reads them typed as ``ctx.options(family)``. Every error names the family,
the package it comes from, the key and the keys it has.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from recitation import methods
from recitation.errors import ConfigError

FLAG = "--detector-option"


class NoOptions(BaseModel):
    """The options of a family that declares none."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def option_model(kind: methods.Kind, family: str) -> type[BaseModel] | None:
    """The options model the family's methods declare (None: it takes none)."""
    found = {m.option_model for m in methods.family_methods(kind, family)
             if m.option_model is not None}
    if len(found) > 1:
        raise ConfigError(f"method registry: the methods of family '{family}' declare "
                          "different option models; declare one for the family")
    return found.pop() if found else None


def _who(kind: methods.Kind, family: str) -> str:
    """``detector 'shout' (plug-in package 'shoutplug')``, or without the package for a
    family of recitation's own."""
    infos = methods.family_methods(kind, family)
    plug = methods.origin(infos[0].name) if infos else None
    return f"{kind} '{family}'" + (f" (plug-in package '{plug.package}')" if plug else "")


def parse_pairs(values: Iterable[str], flag: str = FLAG) -> dict[str, dict[str, str]]:
    """``["shout.times=3", "shout.word=x"]`` -> ``{"shout": {"times": "3", "word": "x"}}``
    (values stay strings: the family's model converts them)."""
    out: dict[str, dict[str, str]] = {}
    for raw in values:
        name, eq, value = raw.partition("=")
        family, dot, key = name.strip().partition(".")
        if not (eq and dot and family and key):
            raise ConfigError(f"{flag} '{raw}': write FAMILY.key=value, e.g. "
                              f"{flag} shout.times=3")
        out.setdefault(family, {})[key] = value
    return out


def check_options(kind: methods.Kind, given: Mapping[str, Mapping[str, Any]],
                  chosen: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    """``given`` validated against each family's options model, as plain JSON values (the
    run's config stores them); a family not registered, not ``chosen``, without options, or
    a key it does not have, or a value its model refuses: a ConfigError saying which."""
    chosen = list(chosen) if chosen is not None else None
    out: dict[str, dict[str, Any]] = {}
    for family, values in given.items():
        methods.check_family(kind, family, f"{FLAG} {family}.…")
        if chosen is not None and family not in chosen:
            raise ConfigError(f"{FLAG} {family}.…: {_who(kind, family)} is not run "
                              f"(chosen: {', '.join(chosen)}); add it to the detectors")
        out[family] = validate(kind, family, values).model_dump(mode="json")
    return out


def validate(kind: methods.Kind, family: str, values: Mapping[str, Any]) -> BaseModel:
    """The family's options model built from ``values`` (defaults for the keys not given)."""
    model = option_model(kind, family)
    if model is None:
        if values:
            raise ConfigError(f"{FLAG} {family}.{next(iter(values))}: {_who(kind, family)} "
                              "takes no options")
        return NoOptions()
    allowed = list(model.model_fields)
    for key in values:
        if key not in allowed:
            raise ConfigError(f"{FLAG} {family}.{key}: {_who(kind, family)} has no option "
                              f"'{key}'; its options: {', '.join(allowed) or 'none'}")
    try:
        return model.model_validate(dict(values))
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "?"
        raise ConfigError(f"{FLAG} {family}.{key}: {_who(kind, family)}: {err['msg']} "
                          f"(got {err.get('input')!r}); its options: "
                          f"{', '.join(allowed)}") from None
