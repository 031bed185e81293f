"""Every command's --help renders: a stray '%' in a help string breaks argparse only there."""
from __future__ import annotations

import argparse

from recitation.cli import build_parser


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...]):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, path + (name,))


def test_every_command_help_renders() -> None:
    parsers = list(_walk(build_parser(), ()))
    assert len(parsers) > 20
    for path, parser in parsers:
        text = parser.format_help()
        assert text.startswith("usage:"), path
