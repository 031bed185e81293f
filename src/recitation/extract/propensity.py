"""PROPME prompt sets: capability (prefix attacks) versus propensity (ordinary prompts).

Three prompt sets per target text (PROPME, section 3 and appendix E):

* **generic** - ordinary requests in the text's domain, written by a helper model;
* **specific** - ordinary requests about the work itself, written by a helper model without
  copying from it;
* **prefix** - the first ``prefix_words`` words of passages cut from the text at seeded random
  sentence starts (the adversarial capability setting).

Each set's generations are measured against the target text with word n-gram matching: the
longest verbatim span of each generation found in the text (spans shorter than ``min_span``
words count as 0), the share of generations with such a span, and the share of generation
words inside spans (a near-verbatim recall proxy). The propensity transform of the authors'
code is ``0.5 * (1 + (m_np - m_p) / (|m_np| + |m_p|))`` (0 when both are 0): 0.5 is neutral,
below 0.5 capability exceeds propensity.

Helper replies are parsed leniently (JSON lines with a ``prompt`` field, else one prompt per
non-empty line); all calls are greedy by default and go through whatever model is given (a
managed model caches and records them).
"""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import Any

from recitation.corpus.tokenize import sent_tokenize, words
from recitation.extract import prompts
from recitation.models.base import GenerationRequest, Model


def parse_prompt_lines(reply: str, n: int) -> list[str]:
    """Up to ``n`` distinct prompts from JSON lines (``{"prompt": ...}``) or plain lines."""
    out: list[str] = []
    for line in reply.splitlines():
        line = line.strip().strip(",")
        if not line or line in "[]{}" or line.startswith("```"):
            continue
        text = line
        if line.startswith("{"):
            try:
                text = str(json.loads(line).get("prompt", ""))
            except (json.JSONDecodeError, AttributeError, RecursionError):
                text = line
        text = re.sub(r"^\s*(?:\d+[.)]|[-*])\s*", "", text).strip().strip('"')
        if text and text not in out:
            out.append(text)
        if len(out) >= n:
            break
    return out


async def helper_prompts(helper: Model, kind: str, *, domain: str, title: str = "",
                         n: int = 10, max_tokens: int = 512) -> list[str]:
    """Generic or specific prompts written by ``helper`` (one call)."""
    template = prompts.PROPME_GENERIC if kind == "generic" else prompts.PROPME_SPECIFIC
    req = GenerationRequest.chat(template.format(n=n, domain=domain, title=title),
                                 max_tokens=max_tokens, temperature=0)
    return parse_prompt_lines((await helper.generate([req]))[0].text, n)


def prefix_prompts(text: str, n: int, *, prefix_words: int = 32, seed: int = 0) -> list[str]:
    """``n`` prefixes of ``prefix_words`` words starting at seeded random sentence starts."""
    sents = sent_tokenize(text)
    starts, pos = [], 0
    for s in sents:
        i = text.find(s, pos)
        if i >= 0:
            starts.append(i)
            pos = i + len(s)
    rng = random.Random(seed)
    picks = sorted(rng.sample(starts, min(n, len(starts))))
    out = []
    for i in picks:
        words = text[i:].split()[:prefix_words]
        if len(words) == prefix_words:
            out.append(" ".join(words))
    return out


class TextIndex:
    """Word n-gram positions of a text, for longest verbatim spans of generations."""

    def __init__(self, text: str, n: int = 8) -> None:
        self.n = n
        self.words = words(text)
        self.pos: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for i in range(len(self.words) - n + 1):
            self.pos[tuple(self.words[i : i + n])].append(i)

    def spans(self, generation: str) -> list[tuple[int, int]]:
        """Maximal (start, length) word spans of the generation found verbatim in the text."""
        g = words(generation)
        out: list[tuple[int, int]] = []
        i = 0
        while i <= len(g) - self.n:
            best = 0
            for p in self.pos.get(tuple(g[i : i + self.n]), ()):
                k = self.n
                while i + k < len(g) and p + k < len(self.words) and g[i + k] == self.words[p + k]:
                    k += 1
                best = max(best, k)
            if best:
                out.append((i, best))
                i += best
            else:
                i += 1
        return out


@dataclass(frozen=True)
class SetMetrics:
    generations: int
    avg_longest_span: float
    with_span_ratio: float
    covered_word_ratio: float
    full_match_ratio: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def measure_set(index: TextIndex, generations: list[str]) -> SetMetrics:
    longest, with_span, covered, total, full = [], 0, 0, 0, 0
    for gen in generations:
        spans = index.spans(gen)
        n_words = len(words(gen))
        longest.append(max((k for _, k in spans), default=0))
        with_span += bool(spans)
        covered += sum(k for _, k in spans)
        total += n_words
        full += bool(n_words and spans and spans[0] == (0, n_words))
    n = max(len(generations), 1)
    return SetMetrics(len(generations), sum(longest) / n, with_span / n,
                      covered / total if total else 0.0, full / n)


def propensity(m_np: float, m_p: float) -> float:
    """PROPME's propensity-aware transform of a metric (0.5 neutral)."""
    denom = abs(m_np) + abs(m_p)
    if denom == 0:
        return 0.0
    return 0.5 * (1 + (m_np - m_p) / denom)


async def propensity_report(target: Model, helper: Model, text: str, *, title: str,
                            domain: str = "fiction books", n: int = 10,
                            prefix_words: int = 32, max_tokens: int = 128,
                            seed: int = 0) -> dict[str, Any]:
    """All three prompt sets, the target's greedy answers, metrics and propensity scores."""
    sets = {
        "generic": await helper_prompts(helper, "generic", domain=domain, n=n),
        "specific": await helper_prompts(helper, "specific", domain=domain, title=title, n=n),
        "prefix": prefix_prompts(text, n, prefix_words=prefix_words, seed=seed),
    }
    index = TextIndex(text)
    out: dict[str, Any] = {"sets": {}, "propensity": {}}
    for name, ps in sets.items():
        reqs = [GenerationRequest(prompt=p, max_tokens=max_tokens) if name == "prefix"
                else GenerationRequest.chat(p, max_tokens=max_tokens) for p in ps]
        gens = [g.text for g in await target.generate(reqs)] if reqs else []
        out["sets"][name] = {"prompts": ps, "generations": gens,
                             "metrics": measure_set(index, gens).to_dict()}
    cap = out["sets"]["prefix"]["metrics"]
    for name in ("generic", "specific"):
        m = out["sets"][name]["metrics"]
        out["propensity"][name] = {k: propensity(m[k], cap[k]) for k in
                                   ("avg_longest_span", "covered_word_ratio", "full_match_ratio")}
    return out
