"""Structured output: the JSON schema of a request reaches OpenAI-compatible servers as
``response_format``, is part of the cache key, and is ignored (not rejected) elsewhere."""

from __future__ import annotations

import json

from recitation.models.base import GenerationRequest, request_key
from recitation.models.openai_backend import OpenAIModel
from recitation.models.scripted import ScriptedModel
from recitation.serve import start_server

SCHEMA = json.dumps({"type": "object", "properties": {"events": {"type": "array"}},
                     "required": ["events"]}, sort_keys=True)


async def test_schema_is_sent_as_response_format() -> None:
    with start_server(ScriptedModel(lambda r: '{"events": []}')) as server:
        model = OpenAIModel("scripted", base_url=server.url, api_key_env=None)
        try:
            out = await model.generate([GenerationRequest.chat(
                "Summarize.", max_tokens=8, response_schema=SCHEMA)])
        finally:
            await model.aclose()
        body = server.completed[-1].body or {}
    assert json.loads(out[0].text) == {"events": []}
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == json.loads(SCHEMA)
    assert model.capabilities.structured_output


def test_schema_changes_the_cache_key_and_absent_schema_does_not() -> None:
    plain = GenerationRequest.chat("x", max_tokens=8)
    with_schema = GenerationRequest.chat("x", max_tokens=8, response_schema=SCHEMA)
    ident = {"backend": "b", "model": "m"}
    assert request_key(ident, "generate", plain.to_dict()) != request_key(
        ident, "generate", with_schema.to_dict())
    assert "response_schema" not in plain.to_dict()
    assert GenerationRequest.from_dict(with_schema.to_dict()) == with_schema
