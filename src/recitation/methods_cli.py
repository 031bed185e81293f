"""``recitation methods``: every registered method with its paper and access (the registry
is :mod:`recitation.methods`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from recitation.errors import ConfigError
from recitation.methods import KINDS, all_methods, markdown_table, origin


def add_methods_parser(sub: Any) -> None:
    p = sub.add_parser("methods", help="list every extraction, detection and probe method "
                       "with its paper and the access it needs")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="a JSON list of dicts")
    out.add_argument("--markdown", action="store_true",
                     help="the method table of docs/methods.md")
    out.add_argument("--write-docs", type=Path, metavar="PATH",
                     help="rewrite the table between the method-table markers of PATH "
                     "(docs/methods.md)")
    p.add_argument("--kind", choices=(*KINDS, "guard"), default=None,
                   help="only methods of this kind (guard: the checks that decide whether "
                   "the methods' evidence can be trusted, listed after the methods)")
    p.set_defaults(func=cmd_methods)


BEGIN, END = "<!-- methods:begin -->\n", "<!-- methods:end -->"


def package(name: str) -> str:
    """The package that registers method ``name``: recitation, or a plug-in's."""
    plug = origin(name)
    return plug.package if plug is not None else "recitation"


def write_docs(path: Path) -> None:
    """Replace the table between ``BEGIN`` and ``END`` in ``path`` with the registry's."""
    text = path.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise ConfigError(f"{path}: no method-table markers ({BEGIN.strip()} ... {END})")
    head, rest = text.split(BEGIN, 1)
    path.write_text(head + BEGIN + markdown_table(plugins=False) + END + rest.split(END, 1)[1],
                    encoding="utf-8")


def cmd_methods(args: argparse.Namespace) -> int:
    if args.write_docs:
        write_docs(args.write_docs)
        print(f"wrote the method table of {args.write_docs}")
        return 0
    if args.markdown:
        print(markdown_table(args.kind), end="")
        return 0
    if args.kind == "guard":
        return _guards(args.json)
    infos = all_methods(args.kind)
    if args.json:
        print(json.dumps([m.to_dict() | {"package": package(m.name)} for m in infos],
                         indent=2))
        return 0
    from rich.table import Table

    from recitation.runs.console import console

    t = Table(title="methods (recitation methods --json for every field)")
    for col in ("method", "kind", "selected by", "paper", "access", "calls"):
        t.add_column(col, overflow="fold")
    for m in infos:
        plug = "" if package(m.name) == "recitation" else f"\nplug-in {package(m.name)}"
        t.add_row(f"{m.name}\n({m.title}){plug}", m.kind, m.selected_by, m.paper,
                  ", ".join(sorted(a.value for a in m.access)),
                  f"per {m.unit}: {m.calls_formula}")
    console.print(t)
    return _guards(False) if args.kind is None else 0


def _guards(as_json: bool) -> int:
    """The guards (:mod:`recitation.guards`): a table, or a JSON list."""
    from recitation.guards import all_guards

    if as_json:
        print(json.dumps([g.to_dict() for g in all_guards()], indent=2))
        return 0
    from rich.table import Table

    from recitation.runs.console import console

    t = Table(title="guards (recitation methods --kind guard --json for every field)")
    for col in ("guard", "guards", "runs", "on failure", "calls"):
        t.add_column(col, overflow="fold")
    for g in all_guards():
        t.add_row(f"{g.name}\n({g.title})", g.guards, g.runs,
                  f"{g.on_failure}; override: {g.override or 'none'}", g.calls)
    console.print(t)
    return 0
