"""Fuzzing the loaders and parsers with hypothesis, bounded and deterministic
(``derandomize=True``, a fixed number of examples per target, no example database).

Every target must either return its normal result or raise the toolkit's own error
(CorpusError / ConfigError / SummaryProblem) — never a stray TypeError, RecursionError,
UnicodeDecodeError or a hang. The number of inputs is in docs/reliability.md:
``len(TARGETS) * EXAMPLES``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recitation.corpus.echotrace import load_echotrace, parse_echotrace
from recitation.corpus.files import decode_text
from recitation.corpus.jsonl import load_jsonl
from recitation.corpus.latex import load_latex
from recitation.corpus.pdnc import load_characters, load_quotations
from recitation.corpus.text import split_chapters, strip_gutenberg
from recitation.errors import ConfigError, CorpusError
from recitation.extract.summary import SummaryProblem, parse_events
from recitation.extract.verifier import parse_judge
from recitation.models.config import parse_model_spec
from recitation.runs.config import parse_config
from recitation.trace.propme import parse_prompts

EXAMPLES = 120
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=5)
    | st.dictionaries(st.sampled_from(["book_name", "chapters", "events", "text_segment",
                                       "title", "characters", "detailed_summary",
                                       "segmentation_boundaries", "first_sentence",
                                       "chapter_title", "x"]) | st.text(max_size=8),
                      inner, max_size=6),
    max_leaves=25)
# text built from the characters parsers care about, so the fuzz reaches their branches
tex_text = st.lists(st.sampled_from(list("\\{}[]#%$ \nab1") + [
    "\\input{a}", "\\newcommand", "\\def", "\\section{", "\\begin{document}",
    "\\end{document}", "\\begin{abstract}", "\\title{", "\\ma", "\\mb"]),
                    max_size=60).map("".join)
csv_text = st.lists(st.sampled_from(list(',"[]{}()\'0123456789 \n\x00a-') + [
    "quoteID", "quoteText", "quoteByteSpans", "Aliases", "Main Name", '"[1, 2]"',
    '"[[0, 3]]"', '"[(1,)]"', "{'a'}"]),
                    max_size=80).map("".join)
reply_text = st.text(max_size=200) | st.builds(
    lambda v, pre: pre + json.dumps(v), json_values, st.sampled_from(["", "```json\n", "x{"])
) | st.builds(lambda n, c: c * n, st.integers(0, 5000), st.sampled_from(["[", "{", '{"a":[']))


def _tmp_file(name: str, data: bytes) -> Path:
    d = Path(tempfile.mkdtemp(prefix="recitation-fuzz-"))
    p = d / name
    p.write_bytes(data)
    return p


def _ok(fn: Callable[[], Any], *errors: type[BaseException]) -> None:
    try:
        fn()
    except errors:
        pass


@FUZZ
@given(st.binary(max_size=300))
def test_fuzz_decode_text(data: bytes) -> None:
    try:
        text = decode_text(data, "f.txt")
    except CorpusError as e:
        assert "f.txt" in str(e)
        return
    assert text.strip() and "\x00" not in text


@FUZZ
@given(json_values)
def test_fuzz_parse_echotrace(value: Any) -> None:
    _ok(lambda: parse_echotrace(value, source="fuzz.json"), CorpusError)


@FUZZ
@given(st.binary(max_size=200) | st.builds(lambda v: json.dumps(v).encode(), json_values))
def test_fuzz_load_echotrace_bytes(data: bytes) -> None:
    _ok(lambda: load_echotrace(_tmp_file("b.json", data)), CorpusError)


@FUZZ
@given(st.lists(st.binary(max_size=40) | st.builds(lambda v: json.dumps(v).encode(),
                                                     json_values), max_size=5))
def test_fuzz_jsonl(lines: list[bytes]) -> None:
    _ok(lambda: load_jsonl(_tmp_file("c.jsonl", b"\n".join(lines))), CorpusError)


@FUZZ
@given(csv_text, csv_text, st.text(max_size=60))
def test_fuzz_pdnc_csvs(quotes: str, chars: str, novel: str) -> None:
    q = _tmp_file("quotation_info.csv", quotes.encode())
    c = _tmp_file("character_info.csv", chars.encode())
    _ok(lambda: load_quotations(q, novel), CorpusError)
    _ok(lambda: load_characters(c), CorpusError)


@FUZZ
@given(tex_text, tex_text)
def test_fuzz_latex(main: str, included: str) -> None:
    d = Path(tempfile.mkdtemp(prefix="recitation-fuzz-"))
    (d / "main.tex").write_text("\\documentclass{article}" + main)
    (d / "a.tex").write_text(included)
    _ok(lambda: load_latex(d / "main.tex"), CorpusError)


@FUZZ
@given(st.text(max_size=300))
def test_fuzz_gutenberg_and_chapters(text: str) -> None:
    g = strip_gutenberg(text)
    assert isinstance(g.body, str)
    for title, body in split_chapters(g.body):
        assert isinstance(title, str) and body


@FUZZ
@given(reply_text)
def test_fuzz_model_reply_parsers(reply: str) -> None:
    _ok(lambda: parse_events(reply), SummaryProblem)
    assert parse_judge(reply) in (True, False, None)
    assert all(isinstance(p, str) and p for p in parse_prompts(reply))


@FUZZ
@given(st.text(max_size=40))
def test_fuzz_model_spec(spec: str) -> None:
    _ok(lambda: parse_model_spec(spec), ConfigError)


@FUZZ
@given(json_values | st.dictionaries(
    st.sampled_from(["job", "model", "budget", "params", "seed", "cache", "name"]),
    json_values | st.sampled_from(["prefix_probe", "smollm2"]), max_size=6))
def test_fuzz_run_config(data: Any) -> None:
    _ok(lambda: parse_config(data, source="fuzz.yaml"), ConfigError)


TARGETS = [test_fuzz_decode_text, test_fuzz_parse_echotrace, test_fuzz_load_echotrace_bytes,
           test_fuzz_jsonl, test_fuzz_pdnc_csvs, test_fuzz_latex,
           test_fuzz_gutenberg_and_chapters, test_fuzz_model_reply_parsers,
           test_fuzz_model_spec, test_fuzz_run_config]


def test_fuzz_targets_are_listed() -> None:
    """docs/reliability.md counts len(TARGETS) * EXAMPLES inputs: keep the list whole."""
    names = {n for n in globals() if n.startswith("test_fuzz_")}
    assert names - {"test_fuzz_targets_are_listed"} == {t.__name__ for t in TARGETS}
