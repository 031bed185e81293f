"""CAMIA (Chang, Shamsabadi, Katevas, Haddadi and Shokri, "Context-Aware Membership
Inference Attacks against Pre-trained Large Language Models", EMNLP 2025), as the authors'
code combines its signals without knowledge of members (changhongyan123/context_aware_mia,
``run_ours_train_lr.py``: the "Average" row).

For every text, 75 signals of its per-token loss trajectory and of the trajectory of the text
repeated six times (:mod:`recitation.detect.camia_signals`). Each signal is turned so that
lower is member-like (per group of signals, :data:`DIRECTIONS`), compared with the same signal
on a **population of non-members**: ``p = percentileofscore(population, v, kind="rank") / 100``
(the share of the population at or below it, ties halved; small is member-like); and the
score is minus the mean of the 75 p-values: **higher means member**.

The population is 30% of the run's controls (the authors: 30% of the non-members), drawn with
the run's seed; they calibrate CAMIA and get no CAMIA score, so CAMIA's own thresholds and
AUC use the other controls (as ReCaLL's prefix controls). CAMIA needs no reference model, but
needs controls from the distribution of the audited texts.

Directions: the authors negate each of their 25 keys (:data:`KEYS`: a family, or a family's
difference between copies, of 3 signals each) whose mean over members exceeds its mean over
non-members, from the labels of the whole evaluation set (test targets included). A detector
cannot see labels, so ours are fixed: by default one sign per group of 11 (a family with its
two copy differences), measured once on a development set, the quick organism at epoch 2 (15
members, 15 non-members; ``benchmarks/camia_directions.py``), and kept in
:data:`DIRECTIONS`; ``camia_signs`` gives one sign per key instead, as the authors (measured
on a development organism with the same script, ``--keys``). Differences: docs/detection.md.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

from recitation.detect.camia_signals import KEYS, camia_signals, group_of, key_of, repeated
from recitation.detect.samples import Sample
from recitation.detect.scoring import DetectorScore, SampleResult, ScoringContext
from recitation.errors import ConfigError
from recitation.methods import Access, Calls, MethodInfo
from recitation.models.base import Model, TokenScores

POPULATION_SHARE = 0.3  # the authors' pop_idx: 30% of the non-members
MIN_POPULATION = 3

DIRECTIONS: dict[str, int] = {
    "loss": -1, "ppl": 1, "token_diversity": -1, "count_mean": -1, "calibrated_loss": -1,
    "calibrated_ppl": 1, "count_above": -1, "lz": 1, "slope": 1, "approximate_entropy": -1,
    "count_above_pre": -1,
}
"""Per group of signals: -1 where members score higher (negated, so that lower is
member-like), 1 where they score lower; measured on the quick organism at epoch 2 with the
authors' rule (group mean over members against over non-members)."""


def signals_of(plain: TokenScores, rep: TokenScores) -> dict[str, float]:
    """The 75 signals from the text's scores and its repeated text's."""
    both = plain.token_ids is not None and rep.token_ids is not None
    ids = plain.token_ids if both and plain.token_ids is not None else plain.tokens
    rep_ids = rep.token_ids if both and rep.token_ids is not None else rep.tokens
    return camia_signals(plain.logprobs, ids, rep.logprobs, rep_ids)


def check_signs(signs: Mapping[str, int]) -> dict[str, int]:
    """Per-key signs (``camia_signs``): each of the 25 :data:`KEYS` once, -1 (negated:
    members score higher) or 1; anything else a ConfigError naming the keys."""
    unknown = sorted(set(signs) - set(KEYS))
    missing = [k for k in KEYS if k not in signs]
    bad = {k: v for k, v in signs.items() if v not in (-1, 1)}
    if unknown or missing or bad:
        raise ConfigError(f"camia_signs: give -1 or 1 for each of the 25 keys "
                          f"({', '.join(KEYS)}); unknown: {unknown or 'none'}, missing: "
                          f"{missing or 'none'}, not -1 or 1: {bad or 'none'}")
    return {k: int(signs[k]) for k in KEYS}


def signs_by_label(signals: Sequence[Mapping[str, float]], members: Sequence[bool],
                   per_key: bool = True) -> dict[str, int]:
    """The authors' rule on labelled texts: a key (``per_key``, theirs) or a group (ours)
    is negated (-1) when the mean of all its signals over members exceeds that over
    non-members, else 1. For a development set only: it reads the labels."""
    by = key_of if per_key else group_of
    sums: dict[str, dict[bool, list[float]]] = {}
    for sig, member in zip(signals, members, strict=True):
        for k, v in sig.items():
            sums.setdefault(by(k), {True: [], False: []})[bool(member)].append(v)
    return {g: -1 if _mean(s[True]) > _mean(s[False]) else 1 for g, s in sums.items()}


async def labelled_signals(model: Model, texts: Sequence[tuple[str, bool]]
                           ) -> tuple[list[dict[str, float]], list[bool]]:
    """The 75 signals of each (text, member?) with ``model`` (the text and its repetition
    scored in one call), and the member flags of the texts that give them (a text too short
    for the trajectory signals is left out): what :func:`signs_by_label` takes."""
    plain = [t for t, _ in texts]
    got = await model.score(plain + [repeated(t) for t in plain])
    signals, members = [], []
    for (_, member), a, b in zip(texts, got[: len(plain)], got[len(plain):], strict=True):
        try:
            signals.append(signals_of(a, b))
        except ValueError:
            continue
        members.append(member)
    return signals, members


def _mean(v: Sequence[float]) -> float:
    return sum(v) / len(v) if v else math.nan


def oriented(signals: Mapping[str, float], signs: Mapping[str, int] | None = None
             ) -> dict[str, float]:
    """Each signal times its sign: its key's in ``signs`` where given, else its group's in
    :data:`DIRECTIONS`."""
    if signs is not None:
        return {k: v * signs[key_of(k)] for k, v in signals.items()}
    return {k: v * DIRECTIONS[group_of(k)] for k, v in signals.items()}


def camia_score(signals: Mapping[str, float], population: Sequence[Mapping[str, float]],
                signs: Mapping[str, int] | None = None) -> float:
    """Minus the mean over signals of the p-value of the (oriented) signal among the
    population's (scipy's ``percentileofscore``, ``kind="rank"``); ``signs`` per key
    (:func:`check_signs`), else :data:`DIRECTIONS` per group."""
    from scipy.stats import percentileofscore

    mine, pop = oriented(signals, signs), [oriented(p, signs) for p in population]
    ps = [percentileofscore([p[k] for p in pop], v, kind="rank") / 100 for k, v in mine.items()]
    return float(-sum(ps) / len(ps))


def population_ids(controls: Sequence[str], seed: int) -> set[str]:
    """The ids of the controls that calibrate: a seeded 30% of ``controls`` (the run's
    controls in the job's order), drawn as the detector draws them; the others get scores."""
    k = round(len(controls) * POPULATION_SHARE)
    if k < MIN_POPULATION:
        raise ConfigError(f"camia: {len(controls)} controls give a population of {k} "
                          f"non-members; it needs at least {MIN_POPULATION} (30% of "
                          f"the controls): add controls")
    pick = random.Random(f"camia:{seed}").sample(range(len(controls)), k)
    return {controls[i] for i in pick}


class CamiaDetector:
    """The ``camia`` family (a plug-in of the detect job): each text's repeated form scored
    in the job's shared call; the population's signals computed once per job."""

    family = "camia"

    def __init__(self) -> None:
        self._ids: set[str] | None = None
        self._population: list[dict[str, float]] | None = None

    def population(self, ctx: ScoringContext) -> set[str]:
        """The ids of the controls that calibrate (a seeded 30% of the controls)."""
        if self._ids is None:
            controls = [s.id for s in ctx.samples() if s.label == "control"]
            self._ids = population_ids(controls, ctx.seed)
        return self._ids

    def companion_texts(self, ctx: ScoringContext, samples: Sequence[Sample]) -> list[str]:
        pop = self.population(ctx)
        return [repeated(s.text) for s in samples if s.id not in pop]

    async def _population_signals(self, ctx: ScoringContext, model: Model
                                  ) -> list[dict[str, float]]:
        if self._population is None:
            pop = self.population(ctx)
            texts = [s.text for s in ctx.samples() if s.id in pop]
            got = await model.score(texts + [repeated(t) for t in texts])
            found = []
            for plain, rep in zip(got[: len(texts)], got[len(texts):], strict=True):
                try:
                    found.append(signals_of(plain, rep))
                except ValueError:
                    continue
            if len(found) < MIN_POPULATION:
                raise ConfigError(f"camia: only {len(found)} population controls give "
                                  f"signals (at least {MIN_POPULATION} needed)")
            self._population = found
        return self._population

    async def score(self, ctx: ScoringContext, samples: Sequence[Sample],
                    plain: Sequence[TokenScores], companions: Sequence[TokenScores],
                    model: Model) -> dict[str, SampleResult]:
        pop_ids = self.population(ctx)
        population = await self._population_signals(ctx, model)
        out: dict[str, SampleResult] = {}
        reps = iter(companions)
        for i, s in enumerate(samples):
            if s.id in pop_ids:
                out[s.id] = SampleResult(fields={"camia_population": True})
                continue
            try:
                v = camia_score(signals_of(plain[i], next(reps)), population,
                                ctx.params.camia_signs)
            except ValueError as e:
                out[s.id] = SampleResult(error=str(e))
                continue
            out[s.id] = SampleResult([DetectorScore(s.id, "camia", v, True)])
        return out


def _calls(p: Mapping[str, Any]) -> Calls:
    return Calls(score=frozenset({"text", "the text repeated 6 times"}))


CAMIA = MethodInfo(
    name="camia", kind="detector", title="CAMIA",
    paper="Chang et al. 2025 (CAMIA, EMNLP 2025); the authors' code, "
    "changhongyan123/context_aware_mia (the Average combination)",
    access=frozenset({Access.LOGPROBS}), writes=("camia", "camia_population"), calls=_calls,
    calls_formula="2 scores (the text, shared; the text repeated 6 times) + 2 per "
    "population control, once",
    job="detect", family="camia",
    summary="75 signals of the loss trajectory (and of the text repeated), each a p-value "
    "among a population of 30% of the controls (which get no score); minus their mean; "
    "higher means member",
    runner="recitation.detect.camia:CamiaDetector", options=("camia_signs",))
