"""The verdict's pins (verdict/pins.py) function by function, on a made-up registry and
hand-written manifests (fast: no audit is built; tests/verdict/test_pins.py runs them through
a real audit folder). Issue 46 item 6: the mutants of pins.py."""

from __future__ import annotations

import pytest

from recitation import methods
from recitation.errors import StoreError
from recitation.methods import AuditFamily, AuditUse
from recitation.metrics.verbatim import RULE_VERSION, VERBATIM_WORDS
from recitation.verdict.decide import RULES_VERSION
from recitation.verdict.pins import (
    CATALOGUE_RULE,
    V1_PINS,
    Pins,
    catalogue_score,
    first_present,
    pins_now,
    pins_of,
)


def _family(kind: str, name: str, primary: tuple[str, ...], catalogue: int,
            verdict: bool = True) -> AuditFamily:
    use = AuditUse(run="detect", order=0, primary=primary, verdict=verdict, catalogue=catalogue)
    return AuditFamily(kind, name, use, [])  # type: ignore[arg-type]


def test_pins_now_from_a_made_up_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The catalogue: the primary scores of the detector families with a rank, rank 1 first;
    a family without primary scores, without a rank, or not a detector adds nothing."""
    fams = [_family("detector", "a", ("a1", "a2"), 2),
            _family("detector", "b", ("b1",), 1, verdict=False),
            _family("detector", "c", ("c1",), 0),  # never the statistic
            _family("detector", "d", (), 3),  # no primary score
            _family("extraction", "e", ("e1",), 1)]  # not a detector
    monkeypatch.setattr(methods, "audit_families", lambda: fams)
    p = pins_now(12)
    assert p.catalogue == ["b1", "a1", "a2"]
    assert p.primary == {"a": ["a1", "a2"], "c": ["c1"]} and p.reported == {"b": ["b1"]}
    assert (p.rules_version, p.verbatim_rule, p.verbatim_words) == (RULES_VERSION,
                                                                    RULE_VERSION, 12)
    assert p.catalogue_rule == CATALOGUE_RULE and pins_now().verbatim_words == VERBATIM_WORDS


def test_pins_of_a_manifest() -> None:
    assert pins_of({"audit_id": "x"}) is V1_PINS  # format 1: no pins
    raw = {"rules_version": 2, "verbatim_rule": 1, "verbatim_words": 8,
           "primary": {"w": ["s"]}, "reported": {}, "catalogue": ["s"]}
    assert pins_of({"verdict": raw}) == Pins(**raw)  # type: ignore[arg-type]
    with pytest.raises(StoreError, match=r"^audit a-17: its verdict pins do not read \("):
        pins_of({"audit_id": "a-17", "verdict": {"rules_version": 2}})
    with pytest.raises(StoreError, match="verdict pins do not read"):
        pins_of({"audit_id": "a-17", "verdict": raw | {"verbatim_words": 0}})


def test_first_present_and_the_catalogue_score() -> None:
    fams = {"w": ["a", "b", "c"], "p": ["x"], "q": ["y", "z"]}
    assert first_present(fams, {"b", "c", "z"}) == ["b", "z"]
    assert first_present(fams, {"x", "a"}) == ["a", "x"]
    assert first_present(fams, set()) == []
    assert catalogue_score(V1_PINS, {"loss", "min_k_20"}) == "min_k_20"
    assert catalogue_score(V1_PINS, ["pearl_synonym_sensitivity", "loss"]) == \
        "pearl_synonym_sensitivity"
    assert catalogue_score(V1_PINS, {"recall"}) is None
