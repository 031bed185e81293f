"""Organisms that share their non-members (``nonmembers_seed``): the non-members are those
the organism of that seed draws (:func:`recitation.organism.data.split_passages`, the
config otherwise the same), the members this organism's own uniform draw, with its seed,
from the rest of the pool. Several organisms then differ in their members and training
order while a model that reads only text (the base model, a reference model) scores each
non-member once for all of them (``recitation bench claims``).

A module of its own so that the source of :mod:`recitation.organism.data` (part of every
organism's build key) stays as it was: this module's source joins the build key of the
organisms that use it only (:func:`recitation.organism.build.fingerprint`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from recitation.errors import ConfigError
from recitation.organism.config import OrganismConfig
from recitation.organism.data import Novel, Offsets, Passage, cut_passages, split_passages
from recitation.organism.data import _passage as passage_of  # the one way a passage is written


def shared_nonmember_split(cfg: OrganismConfig, novels: Sequence[Novel], offsets: Offsets,
                           count: Callable[[str], int]) -> list[Passage]:
    """The split of an organism with ``cfg.nonmembers_seed`` (module docstring); sorted
    by novel and position, as every split."""
    if cfg.split != "passage" or cfg.nonmembers_seed is None:
        raise ConfigError("organism: nonmembers_seed shares non-members between passage "
                          "splits only; drop it or use --split passage")
    first = split_passages(cfg.model_copy(update={"seed": cfg.nonmembers_seed,
                                                  "nonmembers_seed": None}),
                           novels, offsets, count)
    others = [p for p in first if not p.member]
    taken = {p.id for p in others}
    rest = [(n, span) for n in novels for span in cut_passages(n, offsets, cfg.passage_tokens)
            if f"{n.folder}@{span[0]}" not in taken]
    if cfg.members > len(rest):
        raise ConfigError(f"organism: the members need {cfg.members} passages but only "
                          f"{len(rest)} are left beside the shared non-members; lower the "
                          "sizes")
    rng = np.random.default_rng(cfg.seed)
    picks = rng.choice(len(rest), size=cfg.members, replace=False)
    members = [passage_of(rest[i][0], rest[i][1], count, cfg.doses[k // cfg.members_per_dose])
               for k, i in enumerate(picks)]
    return sorted(members + others, key=lambda p: (p.novel, p.start))

