"""One definition of "reproduced verbatim" (metrics/verbatim.py), checked by brute force and
used by prefix probing, the reproduction null, RECAP's evidence and the report alike, so an
audit cannot say "0 of N reproduced verbatim" beside "K of N reproduced verbatim beyond
chance" (the contradiction issue 46 found)."""

from __future__ import annotations

import asyncio
import itertools
import random
import re

import pytest

from recitation.extract.prefix_probe import PrefixProbeJob
from recitation.metrics.verbatim import verbatim
from recitation.models.base import GenerationRequest
from recitation.models.scripted import ScriptedModel
from recitation.report.evidence import evidence_item, span_summary
from recitation.runs.jobs import make_job


def _brute(a: list[str], b: list[str]) -> int:
    """The longest run of consecutive words both lists share, by trying every pair of
    starts."""
    best = 0
    for i, j in itertools.product(range(len(a)), range(len(b))):
        n = 0
        while i + n < len(a) and j + n < len(b) and a[i + n] == b[j + n]:
            n += 1
        best = max(best, n)
    return best


def _words(text: str) -> list[str]:
    return re.findall(r"\w+(?:'\w+)?", text.lower())


def test_the_longest_run_against_brute_force() -> None:
    rng = random.Random(0)
    vocab = ["the", "a", "sea", "ship", "and", "of", "Ahab", "whale"]
    for _ in range(200):
        g = " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 25)))
        c = " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 25)))
        v = verbatim(g, c, 4)
        assert v.words == _brute(_words(g), _words(c))
        assert v.reproduced == (v.words >= min(4, len(_words(g))) and v.words > 0)
        if v.words:
            assert _words(g)[v.gold_start:v.gold_start + v.words] == \
                _words(c)[v.attempt_start:v.attempt_start + v.words]


def test_case_and_punctuation_do_not_count_and_short_gold_is_all_of_it() -> None:
    assert verbatim("Emma Woodhouse, handsome, clever,", "emma woodhouse handsome clever",
                    8).reproduced  # all of a gold text shorter than 8 words
    assert not verbatim("one two three four five six seven eight nine",
                        "one two three four five six seven", 8).reproduced
    with pytest.raises(ValueError, match="min_words"):
        verbatim("a", "a", 0)


TARGET_REF = ["John 3:16", "Genesis 1:2", "Genesis 1:1"]


def _probe(reply: dict[int, str]) -> list[dict[str, object]]:
    """Prefix probing of three verses on a scripted model that answers passage ``i`` with
    ``reply[i]`` (formatted with the true continuation's words), with a scripted reference
    model for the null."""
    job = make_job("prefix_probe", {"passages": [{"ref": r} for r in TARGET_REF],
                                    "max_words": 32, "null_model": {"backend": "scripted",
                                                                    "model": "echo"}}, 0)
    assert isinstance(job, PrefixProbeJob)
    items = job.items()
    answers = {it.payload["prefix"]: reply[i].format(*it.payload["target"].split())
               for i, it in enumerate(items)}

    def respond(r: GenerationRequest) -> str:
        return answers[str(r.prompt).rstrip()]

    return asyncio.run(job.run_items(items, ScriptedModel(respond)))


def test_prefix_probing_the_null_and_the_report_read_one_rule() -> None:
    recs = _probe({0: "Well, {3} {4} {5} {6} {7} {8} {9} {10} {11}",  # 9 words, from word 3
                   1: "{0} {1} {2} {3} {4} {5} {6}",  # 7 words from the start: not enough
                   2: "nothing like it at all"})
    mid, short, none = recs
    assert mid["verdict"] == "verbatim" and mid["lcp_words"] == 0
    assert (mid["span_words"], mid["span_start"]) == (9, 3)
    t = str(mid["target"]).split()
    assert mid["null"]["span"] == " ".join(t[3:12])  # type: ignore[index]
    assert mid["null"]["span_words"] == 9  # type: ignore[index]
    assert short["verdict"] != "verbatim" and short["lcp_words"] == 7
    assert short["null"] is None and none["null"] is None
    for r in recs:  # the report's count is the probe's decision; the null only where it is
        ev = evidence_item("x", r, None, min_tokens=40, redact=True)
        assert ev["reproduced"] == (r["verdict"] == "verbatim") == (r["null"] is not None)
        # RECAP's evidence decides by the same function on the same texts
        assert span_summary(str(r["target"]), str(r["continuation"]))["reproduced"] == \
            ev["reproduced"]
