"""Built-in member and control sets for auditing on texts with a known answer.

Members
-------
:data:`recitation.corpus.kjv.FAMOUS_PASSAGES`: 20 of the most quoted multi-verse passages of
the King James Bible (public domain), 40-98 words each. Any web-trained model has seen them
many times.

Controls: text the model cannot have seen
-----------------------------------------
A fair control differs from the members *only* in whether the model saw it. Shuffled verses
or modern news fail that test: they differ in fluency, style, vocabulary or length, and a
detector (or a blind baseline that only looks at length or vocabulary) separates them
without any memorization signal. So the controls here are:

* ``KJV_PASTICHE`` — 20 passages in the diction of the King James Bible (thee/thou, -eth
  verbs, "and it came to pass", colon-and-semicolon rhythm), written for recitation in 2026
  and published nowhere else, with the members' length distribution (40-98 words). They are
  new as wholes; their n-grams are of course common, which is the point: a detector must
  find *this text* familiar, not *this style*.
* ``KJV_DEVOTIONAL`` — 20 more passages in the same diction but on the members' subjects
  (God, the LORD, Jesus, faith, love, prayer), written for recitation in 2026. The
  distribution-shift guard showed that ``KJV_PASTICHE`` is separable from famous verses by
  vocabulary alone (bag-of-words AUC 0.95: the famous verses are about God, the pastiche
  about potters and lighthouses); this set closes that gap.
* ``FRESH_CODE`` — 12 Python problems in HumanEval's format (signature, docstring with
  examples, canonical solution), written for recitation in 2026; the controls for HumanEval.

Longer versions for PEARL-length samples (>= 250 words: ``kjv:famous-long`` against
``builtin:kjv-devotional-long``) are in :mod:`recitation.detect.controls_long`.

The texts are package data, one file per set (``recitation/data/controls/``: a passage per
paragraph, FRESH_CODE as JSON); this module reads them. Both sets are released under the
project's license. They are only unseen for models
trained before they were published; for models trained later, write new ones.
"""

from __future__ import annotations

import json
from importlib.resources import files


def _read(name: str) -> str:
    return (files("recitation") / "data" / "controls" / name).read_text(encoding="utf-8")


def passages(name: str) -> tuple[str, ...]:
    """The passages of the package data file ``name``: one per paragraph (blank lines between
    them), the lines of a paragraph joined by single spaces."""
    return tuple(" ".join(p.split()) for p in _read(name).split("\n\n") if p.strip())


KJV_PASTICHE: tuple[str, ...] = passages("kjv_pastiche.txt")
KJV_DEVOTIONAL: tuple[str, ...] = passages("kjv_devotional.txt")
FRESH_CODE: tuple[dict[str, str], ...] = tuple(
    {"prompt": c["prompt"], "canonical_solution": c["canonical_solution"]}
    for c in json.loads(_read("fresh_code.json")))
