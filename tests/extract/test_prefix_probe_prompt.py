"""The prefix-probing job's chat mode asks with the RECAP authors' prompt by default."""

from __future__ import annotations

import asyncio

from recitation.extract.prefix_probe import PrefixProbeJob
from recitation.models.scripted import ScriptedModel
from recitation.runs.jobs import make_job


def _first_request(params: dict[str, object]) -> tuple[str, str]:
    job = make_job("prefix_probe", params, 0)
    assert isinstance(job, PrefixProbeJob)
    items = job.items()[:1]
    model = ScriptedModel(lambda r: "x")
    asyncio.run(job.run_items(items, model))
    msgs = model.requests[0].messages or ()
    return (msgs[0].content if len(msgs) > 1 else ""), msgs[-1].content


def test_chat_mode_uses_the_authors_prompt_by_default() -> None:
    params = {"mode": "chat", "passages": [{"ref": "John 3:16"}], "max_words": 20}
    system, user = _first_request(params)
    assert system == ('According to "The Holy Bible, King James Version", please complete '
                      "the following text with 10 words.")
    assert user == "For God so loved the world, that he gave his"


def test_continue_prompt_remains_a_named_option() -> None:
    params = {"mode": "chat", "chat_prompt": "continue", "passages": [{"ref": "John 3:16"}],
              "max_words": 20}
    system, user = _first_request(params)
    assert system == "" and user.startswith("Continue this text exactly, word for word:")
