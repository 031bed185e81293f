"""Passage groups of the ground-truth benchmark (doses and non-members) and the share row
every extraction table uses; shared by the units and the analysis."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from recitation.metrics.stats import clopper_pearson
from recitation.organism.data import Passage


def group_of(p: Passage) -> str:
    return f"dose{p.dose}" if p.member else "nonmember"


def group_order(group: str) -> tuple[int, int]:
    """Dose groups by dose, then the non-members."""
    return (1, 0) if group == "nonmember" else (0, int(group.removeprefix("dose")))


def share_row(group: str, rows: Sequence[tuple[bool, bool, float]]) -> dict[str, Any]:
    """(whole text reproduced, >= 1 40-token passage, ROUGE-L) per passage -> shares with
    Clopper-Pearson intervals and the mean ROUGE-L."""
    n = len(rows)
    exact, forty = sum(int(x[0]) for x in rows), sum(int(x[1]) for x in rows)
    return {"group": group, "n": n, "exact": exact, "exact_share": exact / n,
            "exact_ci": list(clopper_pearson(exact, n)), "passages40": forty,
            "passages40_share": forty / n, "passages40_ci": list(clopper_pearson(forty, n)),
            "mean_rouge_l": sum(x[2] for x in rows) / n}
