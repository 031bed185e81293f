"""Prompt texts sent by more than one method family.

``extract/`` and ``detect/`` are peers that import neither each other, so a prompt both send
lives here, below both. Prompts of one method stay with it (the RECAP prompts in
:mod:`recitation.extract.prompts`, PEARL's summarization prompt in
:mod:`recitation.detect.pearl`).
"""

from __future__ import annotations

COPY_EXACTLY = "Continue this text exactly, word for word:\n\n{text}"
"""The copy-exactly request: one user turn, no title, no length. Sent by the prefix probe
(``chat_prompt: continue``), RECAP's prefix baseline (``prefix_prompt: continue``) and
PEARL's completion task in chat mode."""


def copy_exactly(text: str) -> str:
    """:data:`COPY_EXACTLY` around ``text``."""
    return COPY_EXACTLY.format(text=text)
