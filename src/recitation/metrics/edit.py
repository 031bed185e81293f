"""HELM's copyright metrics: longest common prefix, edit distance, edit similarity.

All functions take token sequences (words, model tokens, characters) so the caller chooses
the unit; HELM compares the model's completion with the reference cut to the completion's
length (:func:`truncate_reference`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from rapidfuzz.distance import Levenshtein


def longest_common_prefix(reference: Sequence[Hashable], candidate: Sequence[Hashable]) -> int:
    """Number of leading tokens the two sequences share."""
    n = 0
    for a, b in zip(reference, candidate, strict=False):
        if a != b:
            break
        n += 1
    return n


def truncate_reference(reference: Sequence[Hashable],
                       candidate: Sequence[Hashable]) -> Sequence[Hashable]:
    """HELM: the reference is cut to the completion's length before comparing."""
    return reference[: len(candidate)]


def edit_distance(reference: Sequence[Hashable], candidate: Sequence[Hashable]) -> int:
    """Levenshtein distance over tokens (insert, delete, substitute: cost 1 each)."""
    return int(Levenshtein.distance(list(reference), list(candidate)))


def edit_similarity(reference: Sequence[Hashable], candidate: Sequence[Hashable]) -> float:
    """1 - distance / max(len); 1.0 for two empty sequences."""
    longest = max(len(reference), len(candidate))
    if longest == 0:
        return 1.0
    return 1.0 - edit_distance(reference, candidate) / longest


def helm_copyright_metrics(reference: str, completion: str) -> dict[str, float]:
    """HELM's three copyright metrics on whitespace tokens of two strings.

    The reference is cut to the completion's length first (:func:`truncate_reference`), as
    HELM does; returns ``longest_common_prefix``, ``edit_distance`` and
    ``edit_similarity``.
    """
    cand = completion.split()
    ref = truncate_reference(reference.split(), cand)
    return {
        "longest_common_prefix": float(longest_common_prefix(ref, cand)),
        "edit_distance": float(edit_distance(ref, cand)),
        "edit_similarity": edit_similarity(ref, cand),
    }
