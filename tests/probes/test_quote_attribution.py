"""Quotation attribution as the authors run it: the reply's token limit (2000), the passage
unwrapped as their ``clean_context`` leaves it, and the sub-quote as the unit."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from recitation.models.base import GenerationRequest
from recitation.models.scripted import ScriptedModel
from recitation.probes import quote_attribution as qa
from recitation.probes.novel import load_novel
from recitation.runs.jobs import make_job


def test_unwrap_joins_lines_as_the_authors_clean_context() -> None:
    """Worked by hand from the authors' ``incremental_pred.py``, ``clean_context``: a lone
    newline between two of [word character . , :] becomes a space, the match consuming the
    character after it; then ``_`` -> space; then each run of three spaces -> one."""
    raw = ('|1|"It was\nnot\nme."|1|\n\nShe\nwent _quite_ away;\nthen\n"Oh!"\nsaid\n'
           '|2|"Yes: all\nright,\n1,\n2."|2| a\nb\nc, Mr.\nSmith:\nthe _so_\n_very_ x    y'
           '      z\n-\nw')
    want = ('|1|"It was not me."|1|\n\n'   # letters joined; a blank line kept
            'She went  quite  away;\n'     # _ -> space (two spaces stay); ";" ends a line
            'then\n"Oh!"\nsaid\n'          # a line starting or ending with '"' is kept
            '|2|"Yes: all right, 1, 2."|2|'  # digits , : joined; no join across a marker
            ' a b\nc, '                    # "a\nb\nc": "b" is consumed by the first join
            'Mr. Smith: the  so very  x  y  z\n-\nw')  # "_\n_" joined; 4 and 6 spaces -> 2
    assert qa.unwrap(raw) == want


def _answer(name: str) -> Any:
    def reply(req: GenerationRequest) -> str:
        prompt = req.messages[-1].content if req.messages else ""
        n = len(set(re.findall(r"\|(\d+)\|", prompt.split("**Names**")[0])))
        return "{" + ", ".join(f"'{i}': '{name}'" for i in range(1, n + 1)) + "}"
    return reply


def _run(folder: Path, **params: Any) -> tuple[ScriptedModel, dict[str, dict[str, Any]]]:
    model = ScriptedModel(_answer("Emma"))
    job = make_job("quote_attribution", {"novels": [str(folder)], "max_chapters": 1,
                                         "min_quotes": 1, **params}, 0)
    recs = asyncio.run(job.run_items(job.items(), model))  # type: ignore[attr-defined]
    return model, {q["id"]: q for r in recs for q in r["quotes"]}


def test_the_authors_defaults_on_emma(shared_data: Path) -> None:
    """Emma's Q18, ``"Especially when _one_ of those two is such a fanciful, troublesome\\n
    creature!" said Emma playfully. "That is what you have in your head, I\\nknow--and ..."``:
    by default two sub-quotes (the authors' quote_info.csv rows Q18-0 and Q18-1), each marked
    and answered apart, narration outside both, lines joined; each request may answer in
    2000 tokens (``incremental_pred.py``: ``max_new_tokens=2000``)."""
    p = qa.QuoteAttributionParams()
    assert (p.max_new_tokens, p.unwrap, p.unit) == (2000, True, "subquote")
    folder = shared_data / "pdnc" / "Emma"
    novel = load_novel(folder)
    model, quotes = _run(folder)
    assert model.requests and all(r.max_tokens == 2000 for r in model.requests)
    prompt = model.requests[0].messages[-1].content  # type: ignore[index]
    assert re.search(r'\|(\d+)\|"Especially when  one  of those two is such a fanciful, '
                     r'troublesome creature!"\|\1\| said Emma playfully\. \|(\d+)\|"That is '
                     r"what you have in your head, I know--and what you would certainly say "
                     r'if my father were not by\."\|\2\|', prompt)
    assert {"Q18-0", "Q18-1"} <= quotes.keys() and "Q18" not in quotes
    emma = novel.character("Emma")
    assert emma is not None
    n_emma = sum(len(q.spans) for q in novel.quotations if q.speaker == "Emma")
    for k in ("Q18-0", "Q18-1"):  # scored apart, Emma counted in sub-quotes
        assert quotes[k]["correct"] and quotes[k]["speaker"] == emma.id
        assert quotes[k]["speaker_quotes"] == n_emma
    first = {q.id: q for q in novel.quotations if f"{q.id}-0" in quotes}
    assert len(quotes) == sum(len(q.spans) for q in first.values()) > len(first)


def test_whole_quotations_and_raw_text_as_options(shared_data: Path) -> None:
    """``unit="quote"``: Q18 is one quote, the narration inside its markers; ``unwrap=False``:
    the chunk's raw lines; ``max_new_tokens`` reaches the request."""
    folder = shared_data / "pdnc" / "Emma"
    novel = load_novel(folder)
    model, quotes = _run(folder, unit="quote", unwrap=False, max_new_tokens=300)
    assert all(r.max_tokens == 300 for r in model.requests)
    prompt = model.requests[0].messages[-1].content  # type: ignore[index]
    assert re.search(r'\|(\d+)\|"Especially when _one_ of those two is such a fanciful, '
                     r'troublesome\ncreature!" said Emma playfully\. "That is what you have in '
                     r'your head, I\nknow--and what you would certainly say if my father were '
                     r'not by\."\|\1\|', prompt)
    assert "Q18" in quotes and "Q18-0" not in quotes
    assert quotes["Q18"]["speaker_quotes"] == sum(q.speaker == "Emma" for q in novel.quotations)
