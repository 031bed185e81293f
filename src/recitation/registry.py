"""One registry mechanism for every plug-in point: methods, backends, report sections, jobs.

A :class:`Registry` maps a name to where its object lives, ``"module:attr"``, and imports it
only when asked for (naming the choices of a command imports no plug-in code). Two sources
feed it:

- the built-in table, a plain dict in the module that owns the plug-in point
  (:data:`recitation.methods.METHODS`, :data:`recitation.models.config.BACKEND_CLASSES`,
  :data:`recitation.report.sections.SECTIONS`, :data:`recitation.runs.jobs.JOBS`); it is read
  at call time, so a test may add a line to it;
- Python entry points of other installed packages, one group per plug-in point
  (:data:`GROUPS`), e.g. in the plug-in's ``pyproject.toml``::

      [project.entry-points."recitation.methods"]
      shout = "shoutplug.detector:SHOUT"

  read once per process through :func:`importlib.metadata.entry_points` (:func:`refresh`
  reads them again). A plug-in may not take a built-in name, and one whose object cannot be
  imported is a :class:`~recitation.errors.ConfigError` naming the package it came from.

An unknown name gets one message everywhere (:func:`unknown`): the name, the closest
registered one (:mod:`difflib`) and the choices. docs/adding-a-method.md walks through an
outside plug-in.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Generic, TypeVar

from recitation.errors import ConfigError

V = TypeVar("V")

GROUPS: dict[str, str] = {
    "method": "recitation.methods",  # a MethodInfo, or a mapping name -> MethodInfo
    "backend": "recitation.backends",  # a Model class (models/base.py)
    "report section": "recitation.sections",  # a Section (report/sections.py)
    "job": "recitation.jobs",  # a Job class (runs/jobs.py)
}
"""The entry-point group of each plug-in point."""


@dataclass(frozen=True)
class PlugIn:
    """One entry point of another package: ``name = path`` in ``group`` of ``package``."""

    name: str
    path: str  # module:attr
    group: str
    package: str  # the distribution that declares it

    def __str__(self) -> str:
        return f"plug-in '{self.package}' ({self.group}: {self.name} = {self.path})"


def unknown(what: str, name: str, known: Iterable[str], where: str = "") -> ConfigError:
    """The one "unknown name" error: ``[where: ]unknown WHAT 'NAME' (did you mean 'X'?);
    choose from A, B``."""
    choices = list(known)
    close = difflib.get_close_matches(name, choices, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    head = f"{where}: " if where else ""
    return ConfigError(f"{head}unknown {what} '{name}'{hint}; choose from {', '.join(choices)}")


@cache
def _all_plug_ins() -> dict[str, tuple[PlugIn, ...]]:
    """Every installed package's entry points of the :data:`GROUPS`, read in one pass over
    the installed packages (about 0.1 s for 130 of them)."""
    found: dict[str, list[PlugIn]] = {g: [] for g in GROUPS.values()}
    seen: set[str] = set()
    for dist in importlib.metadata.distributions():
        package = dist.metadata["Name"] or "?"
        if package in seen:  # the first on sys.path wins, as an import does
            continue
        seen.add(package)
        for ep in dist.entry_points:
            if ep.group in found:
                found[ep.group].append(PlugIn(ep.name, ep.value, ep.group, package))
    return {g: tuple(sorted(ps, key=lambda p: (p.package, p.name))) for g, ps in found.items()}


def plug_ins(group: str) -> tuple[PlugIn, ...]:
    """The entry points of ``group`` of every installed package (read once; :func:`refresh`)."""
    return _all_plug_ins()[group]


def refresh() -> None:
    """Read the installed packages' entry points again (after installing a plug-in)."""
    _all_plug_ins.cache_clear()


def import_path(path: str, what: str, origin: PlugIn | None = None) -> Any:
    """The object at ``module:attr``, imported now. A built-in path that is wrong is a
    ConfigError; a plug-in that fails to import (any exception) is one naming the plug-in."""
    module, _, attr = path.partition(":")
    if origin is not None:
        try:
            return getattr(importlib.import_module(module), attr)
        except Exception as e:  # noqa: BLE001 - anything a foreign package raises
            raise ConfigError(f"{what} registry: {origin} cannot be loaded: "
                              f"{type(e).__name__}: {e}; fix that package or uninstall it "
                              f"(pip uninstall {origin.package})") from e
    try:
        return getattr(importlib.import_module(module), attr)
    except AttributeError:
        raise ConfigError(f"{what} registry: module '{module}' has no '{attr}'") from None


class Registry(Generic[V]):
    """Names -> entries (``V``: a ``module:attr`` path, or a record holding one) of one plug-in
    point: the built-in table ``builtin`` first, then the entry points of ``GROUPS[what]``
    (each made an entry by ``from_plugin(name, plug_in)``)."""

    def __init__(self, what: str, builtin: dict[str, V],
                 from_plugin: Callable[[str, PlugIn], V]) -> None:
        self.what = what
        self.group = GROUPS[what]
        self.builtin = builtin
        self._from_plugin = from_plugin
        self._made: dict[PlugIn, V] = {}

    def plugins(self) -> dict[str, PlugIn]:
        """The plug-ins' names (a plug-in taking a built-in name is refused)."""
        out: dict[str, PlugIn] = {}
        for p in plug_ins(self.group):
            if p.name in self.builtin:
                raise ConfigError(f"{self.what} registry: {p} takes the name '{p.name}', "
                                  f"which recitation's own {self.what} has; rename it")
            if p.name in out:
                raise ConfigError(f"{self.what} registry: {p} and {out[p.name]} both "
                                  f"register '{p.name}'")
            out[p.name] = p
        return out

    def entries(self) -> dict[str, V]:
        """Every entry, built-in first, in registry order."""
        out = dict(self.builtin)
        for name, p in self.plugins().items():
            if p not in self._made:
                self._made[p] = self._from_plugin(name, p)
            out[name] = self._made[p]
        return out

    def names(self) -> list[str]:
        return list(self.builtin) + list(self.plugins())

    def __contains__(self, name: object) -> bool:
        return name in self.builtin or name in self.plugins()

    def origin(self, name: str) -> PlugIn | None:
        """The plug-in that registers ``name``, or None for a built-in (or unknown) one."""
        return None if name in self.builtin else self.plugins().get(name)

    def check(self, name: str, where: str = "") -> str:
        """``name`` when registered, else the one "unknown" error (:func:`unknown`)."""
        if name not in self:
            raise unknown(self.what, name, self.names(), where)
        return name

    def entry(self, name: str, where: str = "") -> V:
        return self.entries()[self.check(name, where)]

    def load(self, name: str, path: str | None = None) -> Any:
        """The object of ``name`` (at ``path``, default its entry), imported now."""
        self.check(name)
        if path is None:
            entry = self.entry(name)
            path = entry if isinstance(entry, str) else entry.path  # type: ignore[attr-defined]
        return import_path(path, self.what, self.origin(name))


def paths(what: str, builtin: dict[str, str]) -> Registry[str]:
    """A registry whose entries are the ``module:attr`` paths themselves."""
    return Registry(what, builtin, lambda name, p: p.path)


def described(registry: Registry[Any]) -> Mapping[str, str]:
    """Name -> where it comes from (``recitation`` or the plug-in's package): the
    ``recitation methods`` listing and error messages."""
    return {n: (p.package if (p := registry.origin(n)) else "recitation")
            for n in registry.names()}
