"""The ``loud`` backend: recitation's scripted model under another name (``loud:echo``)."""

from __future__ import annotations

from recitation.models.scripted import ScriptedModel


class LoudModel(ScriptedModel):
    backend = "loud"
