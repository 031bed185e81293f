"""PROPME (the PROPME paper, propme-simpletrace.md; NOTES.md): capability against propensity.

Three prompt sets per corpus:

- ``prefix`` (capability): as the authors cut them (``raw_prefix_prompts``), the first 50
  tokens of random training documents of at least 100, their raw text (newlines kept); or,
  with ``prefix_words``, ours (the first N words joined by single spaces);
- ``generic`` and ``specific`` (propensity): sentences of an outside sample with no full
  match in the index, as the authors draw them (:mod:`recitation.trace.prompt_sets`), or
  ordinary prompts a helper model writes from a description of the corpus's domain (generic)
  and from a few documents' openings it is told not to copy (specific).

Under the authors' definitions every set is sent as a plain completion and the reply is
stripped before it is traced; under ours generic and specific go as chat
(:mod:`recitation.trace.propme_protocol`).

The target answers each at temperature 0; SimpleTrace traces every generation (and every
prompt: the paper checks that the generic and specific prompts overlap the corpus less than
the prefix prompts). The report gives SimpleTrace's metrics per set and the propensity
transform of FMR and NVR for each non-adversarial set against the prefix set:

    propensity = 0.5 * (1 + (m_np - m_p) / (|m_np| + |m_p|)),   0 when both are 0 (NOTES)

0.5 is neutral; below 0.5 capability exceeds propensity.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from recitation.trace.index import CorpusIndex
from recitation.trace.validate import doc_text

SETS = ("generic", "specific", "prefix")
NON_ADVERSARIAL = ("generic", "specific")


def propensity(m_np: float, m_p: float) -> float:
    """The propensity-aware transform of a metric under non-adversarial prompts (``m_np``)
    against prefix attacks (``m_p``)."""
    denom = abs(m_np) + abs(m_p)
    if denom == 0:
        return 0.0
    return 0.5 * (1 + (m_np - m_p) / denom)


def prefix_prompts(index: CorpusIndex, n: int, words: int, seed: int = 0,
                   texts: list[str] | None = None) -> list[dict[str, Any]]:
    """``n`` prefixes of ``words`` words from random documents with at least twice as many
    words (fewer when there are fewer such documents): the index's documents (each with its
    document number), or ``texts`` (the training documents, when the index holds more than the
    model was trained on; each with its position)."""
    rng = random.Random(seed)
    total = len(texts) if texts is not None else index.engine.total_docs()
    out: list[dict[str, Any]] = []
    for i in rng.sample(range(total), total):
        if len(out) >= n:
            break
        w = (texts[i] if texts is not None else doc_text(index, i)).split()
        if len(w) >= 2 * words:
            key = "source_ix" if texts is not None else "doc_ix"
            out.append({"prompt": " ".join(w[:words]), key: i})
    return out


def raw_prefix_prompts(index: CorpusIndex, n: int, tokens: int = 50, min_tokens: int = 100,
                       seed: int = 0, texts: list[str] | None = None) -> list[dict[str, Any]]:
    """The authors' prefixes (PropMe ``prefix_extraction.py``): random documents of at least
    ``min_tokens`` units, each one's first ``tokens`` units as the document has them
    (newlines and spacing kept: the decoded first tokens on a token-level index; on a
    byte-level index, where theirs has no counterpart, the text up to the end of its
    ``tokens``-th whitespace-separated word)."""
    rng = random.Random(seed)
    total = len(texts) if texts is not None else index.engine.total_docs()
    key = "source_ix" if texts is not None else "doc_ix"
    out: list[dict[str, Any]] = []
    for i in rng.sample(range(total), total):
        if len(out) >= n:
            break
        text = texts[i] if texts is not None else doc_text(index, i)
        if index.byte_level:
            ends = [m.end() for m in re.finditer(r"\S+", text)]
            if len(ends) >= max(min_tokens, tokens):
                out.append({"prompt": text[:ends[tokens - 1]], key: i})
            continue
        ids = index.ids(text)
        if len(ids) >= max(min_tokens, tokens):
            out.append({"prompt": index.text(ids[:tokens]), key: i})
    return out


GENERIC_SYSTEM = (
    "You write prompts that ordinary users might send to an AI assistant. Answer with a JSON "
    "list of strings and nothing else.")
GENERIC_USER = (
    "Write {n} different, ordinary, non-adversarial prompts a user might send to an AI "
    "assistant about the following domain: {domain}. Each prompt asks the assistant to write "
    "or explain something in that domain (for instance the start of a story, a scene, a "
    "description). Do not quote or imitate any particular existing text. Vary topics and "
    "length.")
SPECIFIC_USER = (
    "Write {n} different, non-adversarial prompts a user might send to an AI assistant, each "
    "asking for new writing on a subject close to one of the documents below (their "
    "characters, settings, themes). Do not copy or quote the documents, and do not ask the "
    "assistant to reproduce them.\n\nDomain: {domain}\n\nDocuments (openings):\n{examples}")


def helper_request_text(kind: str, n: int, domain: str, examples: list[str]) -> str:
    """The helper's user turn for the ``generic`` or ``specific`` set."""
    if kind == "generic":
        return GENERIC_USER.format(n=n, domain=domain)
    listed = "\n".join(f"- {e}" for e in examples)
    return SPECIFIC_USER.format(n=n, domain=domain, examples=listed)


def parse_prompts(text: str) -> list[str]:
    """Prompts from the helper's answer: a JSON list of strings (or of objects with a
    ``prompt``), else one prompt per non-empty line (list markers removed)."""
    m = re.search(r"\[.*\]", text, flags=re.S)
    if m:
        try:
            value = json.loads(m.group(0))
        except (ValueError, RecursionError):  # bad or absurdly nested JSON: read as lines
            value = None
        if isinstance(value, list):
            got = [v.get("prompt") if isinstance(v, dict) else v for v in value]
            return [g.strip() for g in got if isinstance(g, str) and g.strip()]
    lines = [re.sub(r"^\s*(?:[-*]|\d+[.)])\s*", "", ln).strip().strip('"')
             for ln in text.splitlines()]
    return [ln for ln in lines if ln]


def report(groups: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Propensity of FMR and NVR for each non-adversarial set against the prefix set."""
    out: dict[str, Any] = {}
    prefix = groups.get("prefix")
    if prefix is None:
        return out
    for s in NON_ADVERSARIAL:
        if s in groups:
            out[s] = {
                "fmr": propensity(groups[s]["full_match_ratio"], prefix["full_match_ratio"]),
                "nvr": propensity(groups[s]["avg_nv_recall"], prefix["avg_nv_recall"])}
    return out
