"""A whole-work organism's data (``split: work``): the model fine-tuned on one public-domain
work read straight through, for whole-book extraction (issue 50).

The work is one PDNC novel (``cfg.work``), cut after its first ``cfg.work_words`` words at
the next chapter end (0: the whole novel), so what the model saw is whole chapters. The text
is cut into windows of ``passage_tokens`` tokens every ``stride_tokens`` tokens (0: a
quarter of a window's overlap), the last one aligned to the end, so every token is trained on
and every transition between two windows is seen with the window before it in context
(continuation crosses them). Each window is a member seen once per epoch: the dose is the
number of epochs, so one training run with checkpoints at epochs 1, 4 and 16 gives the three
doses (``keep_epochs``). There are no non-members: the truth is the work itself.

This module joins the fingerprint of a whole-work organism (``organism/build.py``), as
``train.py`` and ``data.py`` join every organism's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from recitation.errors import ConfigError
from recitation.organism.config import OrganismConfig
from recitation.organism.data import Novel, Offsets, Passage, _passage

_CHAPTER = re.compile(r"\n[ \t]*\n[ \t]*(?=CHAPTER\b|Chapter\b)")


def work_text(cfg: OrganismConfig, novels: Sequence[Novel]) -> tuple[Novel, str]:
    """The novel named ``cfg.work`` and its text up to the first chapter break after
    ``cfg.work_words`` words (the whole text when 0, or when no break follows)."""
    found = [n for n in novels if n.folder == cfg.work]
    if not found:
        raise ConfigError(f"organism split 'work': no PDNC novel '{cfg.work}' (have: "
                          f"{', '.join(n.folder for n in novels)})")
    novel = found[0]
    if not cfg.work_words:
        return novel, novel.text
    words = [m.end() for m in re.finditer(r"\S+", novel.text)]
    if len(words) <= cfg.work_words:
        return novel, novel.text
    brk = _CHAPTER.search(novel.text, words[cfg.work_words - 1])
    return novel, novel.text[: brk.start()] if brk else novel.text


def windows(n_tokens: int, length: int, stride: int) -> list[tuple[int, int]]:
    """Token ranges ``[start, end)`` of ``length`` every ``stride``, the last one ending at
    ``n_tokens`` (one window when the text is shorter)."""
    if n_tokens <= length:
        return [(0, n_tokens)] if n_tokens else []
    starts = list(range(0, n_tokens - length + 1, stride))
    if starts[-1] + length < n_tokens:
        starts.append(n_tokens - length)
    return [(s, s + length) for s in starts]


def work_passages(cfg: OrganismConfig, novels: Sequence[Novel], offsets: Offsets,
                  count: Callable[[str], int]) -> list[Passage]:
    """The work's windows, each a member at dose 1 (module docstring)."""
    novel, text = work_text(cfg, novels)
    offs = offsets(text)
    stride = cfg.stride_tokens or max(1, cfg.passage_tokens * 3 // 4)
    spans = [(offs[a][0], offs[b - 1][1])
             for a, b in windows(len(offs), cfg.passage_tokens, stride)]
    return [_passage(novel, span, count, 1) for span in spans]
