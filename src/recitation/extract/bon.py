"""Best-of-N prompt augmentations (Hughes et al. 2024, "Best-of-N Jailbreaking"), as the
whole-book extraction's phase 1 uses them on a refused request.

Each attempt rewrites the request's instruction with the paper's three text augmentations,
drawn from a seeded generator so an attempt is the same on every resume: **character
scrambling** (each word longer than three characters has its middle characters shuffled
with probability 0.6), **random capitalization** (each character's case flipped to a random
one with probability 0.6) and **character noising** (each printable ASCII character moved
one code point up or down with probability 0.06). The book's own words are left as they are
(ours: a scrambled opening would no longer be the book's opening).
"""

from __future__ import annotations

import random

SCRAMBLE_P = 0.6
CAPITALIZE_P = 0.6
NOISE_P = 0.06


def _scramble(word: str, rng: random.Random) -> str:
    if len(word) <= 3 or rng.random() >= SCRAMBLE_P:
        return word
    middle = list(word[1:-1])
    rng.shuffle(middle)
    return word[0] + "".join(middle) + word[-1]


def _capitalize(ch: str, rng: random.Random) -> str:
    if rng.random() >= CAPITALIZE_P:
        return ch
    return ch.upper() if rng.random() < 0.5 else ch.lower()


def _noise(ch: str, rng: random.Random) -> str:
    code = ord(ch)
    if not 32 <= code <= 126 or rng.random() >= NOISE_P:
        return ch
    moved = code + rng.choice((-1, 1))
    return chr(moved) if 32 <= moved <= 126 else ch


def augment(text: str, seed: int) -> str:
    """``text`` with the three augmentations of attempt ``seed`` (module docstring)."""
    rng = random.Random(seed)
    scrambled = " ".join(_scramble(w, rng) for w in text.split(" "))
    return "".join(_noise(_capitalize(c, rng), rng) for c in scrambled)
