"""The built-in control sets live in package data files (recitation/data/controls/); the texts
read from them are the published sets, byte for byte."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from recitation.detect import controls, controls_long

# SHA-256 of each set (json.dumps, sorted keys) as published in the Python literals of
# detect/controls.py and controls_long.py before they moved to data files (2026-11-26). The
# shift-guard figures and calibrations in the docs were measured on exactly these texts: an
# edit to a data file must be deliberate, with the guard re-run and this hash renewed.
PUBLISHED = {
    "KJV_PASTICHE": "f766182bc62bae1bff43cd87ea79abd856547f888a4138986660128ae72f79aa",
    "KJV_DEVOTIONAL": "d46a509810796300a9ffbea627e9ee79f7af2f93dbe55a235493d08fbdb5ef05",
    "KJV_DEVOTIONAL_LONG": "fb71bd8f30025daca833bcdc05a185dc4ec9bdd4bffcea79cd5862f5edba6c83",
    "FRESH_CODE": "5adfa72c0b7e25fc873e67c72185d9c0f02eb351a677e69d769badbde639a27d",
}


def _sets() -> dict[str, Any]:
    return {"KJV_PASTICHE": controls.KJV_PASTICHE, "KJV_DEVOTIONAL": controls.KJV_DEVOTIONAL,
            "KJV_DEVOTIONAL_LONG": controls_long.KJV_DEVOTIONAL_LONG,
            "FRESH_CODE": controls.FRESH_CODE}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_each_set_is_the_published_one(name: str) -> None:
    value = _sets()[name]
    digest = hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()
    assert digest == PUBLISHED[name]


def test_paragraphs_are_passages() -> None:
    """A passage is one paragraph of its file, wrapped lines joined by one space."""
    raw = (controls._read("kjv_pastiche.txt")).split("\n\n")
    assert len(raw) == len(controls.KJV_PASTICHE) == 20
    assert "\n" in raw[0] and "\n" not in controls.KJV_PASTICHE[0]
    assert controls.KJV_PASTICHE[0] == raw[0].replace("\n", " ")
    assert all(len(c) == 2 and c["prompt"] and c["canonical_solution"]
               for c in controls.FRESH_CODE)
