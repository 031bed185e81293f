"""arXiv LaTeX source trees -> a Book with one chapter per section.

Steps, in order (each can change the text a model is compared against):

1. main file: the ``.tex`` file containing ``\\begin{document}`` (several: the one with
   ``\\documentclass``, then ``main.tex`` / ``ms.tex`` / ``paper.tex``, then the largest);
2. comments stripped (``%`` to end of line, unless escaped; ``comment`` environments);
3. ``\\input``, ``\\include`` and ``\\subfile`` inlined recursively, paths relative to the
   main file's folder, ``.tex`` added when missing; an inclusion cycle raises
   :class:`CorpusError`, a missing file is skipped with a warning; a subfile contributes
   only its ``document`` body;
4. simple macros expanded: ``\\newcommand`` / ``\\renewcommand`` / ``\\providecommand``
   (``\\name`` or ``{\\name}``, optional ``[n]`` arguments, no optional-argument defaults)
   and ``\\def\\name#1#2{...}``; definitions are removed from the text;
5. ``figure``, ``table`` (starred, ``wrap``, ``sideways`` variants) environments removed;
6. text after ``\\bibliography``, ``\\printbibliography``, ``\\begin{thebibliography}`` or
   ``\\end{document}`` dropped;
7. split at ``\\section`` (and ``\\chapter``); the abstract becomes its own chapter.

The section texts keep their LaTeX markup: that is what arXiv-trained models saw.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from recitation.corpus.files import read_text_file
from recitation.corpus.model import Book, make_chapters, slugify
from recitation.errors import CorpusError

logger = logging.getLogger(__name__)

_BEGIN_DOC = re.compile(r"\\begin\s*\{document\}")
_END_DOC = re.compile(r"\\end\s*\{document\}")
_INCLUDE = re.compile(r"\\(input|include|subfile)(?![A-Za-z@])\s*(?:\{([^}]*)\}|([^\s{}\\]+))")
_COMMENT_ENV = re.compile(r"\\begin\{comment\}.*?\\end\{comment\}", re.DOTALL)
_FLOATS = r"(?:figure|table|wrapfigure|wraptable|sidewaysfigure|sidewaystable)\*?"
_FLOAT_ENV = re.compile(rf"\\begin\{{({_FLOATS})\}}.*?\\end\{{\1\}}", re.DOTALL)
_BIB = re.compile(
    r"\\bibliography\s*\{|\\printbibliography|\\begin\{thebibliography\}|\\end\{document\}"
)
_SECTION = re.compile(r"\\(?:section|chapter)\*?\s*(?:\[[^\]]*\])?\s*\{")
_ABSTRACT = re.compile(r"\\begin\{abstract\}(.*?)\\end\{abstract\}", re.DOTALL)
_NEWCOMMAND = re.compile(r"\\(?:re)?newcommand\*?|\\providecommand\*?")
_DEF = re.compile(r"\\def\s*(\\[A-Za-z@]+)((?:#\d)*)\s*\{")
_MAX_EXPANSION_ROUNDS = 20
_MAX_GROWTH = 16  # expanded macros may make the text at most this many times longer (+1 MB)


def strip_comments(tex: str) -> str:
    """Remove ``%`` comments (not ``\\%``) and ``comment`` environments."""
    tex = _COMMENT_ENV.sub("", tex)
    return re.sub(r"(?<!\\)((?:\\\\)*)%[^\n]*", r"\1", tex)


def read_group(tex: str, i: int) -> tuple[str, int]:
    """The content of the ``{...}`` group starting at or after ``tex[i]`` (whitespace
    skipped) and the index after its closing brace; raises CorpusError if unbalanced."""
    while i < len(tex) and tex[i].isspace():
        i += 1
    if i >= len(tex) or tex[i] != "{":
        raise CorpusError(f"expected '{{' at offset {i}")
    depth, j = 0, i
    while j < len(tex):
        c = tex[j]
        if c == "\\":
            j += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return tex[i + 1 : j], j + 1
        j += 1
    raise CorpusError(f"unbalanced braces from offset {i}")


def find_main_file(root: Path) -> Path:
    """The main ``.tex`` file of a source tree (see the module docstring)."""
    candidates = []
    for p in sorted(root.rglob("*.tex")):
        text = strip_comments(read_text_file(p, what="LaTeX file", allow_empty=True))
        if _BEGIN_DOC.search(text):
            is_subfile = re.search(r"\\documentclass\s*(\[[^\]]*\])?\s*\{subfiles\}", text)
            if not is_subfile:
                candidates.append((p, text))
    if not candidates:
        raise CorpusError(f"no .tex file with \\begin{{document}} under {root}")

    def rank(item: tuple[Path, str]) -> tuple[int, int, int]:
        p, text = item
        has_class = int("\\documentclass" in text)
        conventional = int(p.stem.lower() in ("main", "ms", "paper", "article"))
        return (has_class, conventional, len(text))

    return max(candidates, key=rank)[0]


def _resolve(base: Path, name: str) -> Path | None:
    name = name.strip()
    for cand in (base / name, base / f"{name}.tex"):
        if cand.is_file():
            return cand
    return None


def inline_includes(path: Path, base: Path, stack: tuple[Path, ...] = ()) -> str:
    """``path``'s text (comments stripped) with inclusions inlined recursively."""
    real = path.resolve()
    if real in stack:
        chain = " -> ".join(p.name for p in (*stack, real))
        raise CorpusError(f"LaTeX inclusion cycle: {chain}")
    text = strip_comments(read_text_file(path, what="LaTeX file", allow_empty=True))
    if stack and _BEGIN_DOC.search(text):  # a subfile: keep only its document body
        body = _BEGIN_DOC.split(text, maxsplit=1)[1]
        text = _END_DOC.split(body, maxsplit=1)[0]

    def include(m: re.Match[str]) -> str:
        name = m.group(2) if m.group(2) is not None else m.group(3)
        target = _resolve(base, name)
        if target is None:
            logger.warning("%s: \\%s{%s} not found; skipped", path.name, m.group(1), name)
            return ""
        return "\n" + inline_includes(target, base, (*stack, real)) + "\n"

    return _INCLUDE.sub(include, text)


def _macro_name(tex: str, i: int) -> tuple[str, int]:
    while i < len(tex) and tex[i].isspace():
        i += 1
    if tex.startswith("{", i):
        name, j = read_group(tex, i)
        return name.strip(), j
    m = re.compile(r"\\[A-Za-z@]+").match(tex, i)
    if not m:
        raise CorpusError(f"cannot read a macro name at offset {i}")
    return m.group(0), m.end()


def _parse_newcommand(tex: str, start: int, end: int) -> tuple[str, int, str, int] | None:
    """(name, n_args, body, end) of a \\newcommand at ``tex[start:end]``; None if unsupported."""
    name, i = _macro_name(tex, end)
    n_args = 0
    m = re.compile(r"\s*\[(\d)\]").match(tex, i)
    if m:
        n_args, i = int(m.group(1)), m.end()
    if re.compile(r"\s*\[").match(tex, i):  # optional-argument default: not supported
        return None
    body, j = read_group(tex, i)
    return name, n_args, body, j


def extract_macros(tex: str) -> tuple[dict[str, tuple[int, str]], str]:
    """Simple macro definitions (name -> (n_args, body)) and the text without them."""
    macros: dict[str, tuple[int, str]] = {}
    out, pos = [], 0
    pattern = re.compile(_NEWCOMMAND.pattern + "|" + _DEF.pattern)
    for m in pattern.finditer(tex):
        if m.start() < pos:
            continue
        try:
            if m.group(1):  # \def\name#1..{body}
                body, j = read_group(tex, m.end() - 1)
                parsed = (m.group(1), len(m.group(2)) // 2, body, j)
            else:
                parsed = _parse_newcommand(tex, m.start(), m.end())  # type: ignore[assignment]
        except CorpusError as exc:
            logger.warning("macro definition at offset %d not understood: %s", m.start(), exc)
            continue
        if parsed is None:
            continue
        name, n_args, body, j = parsed
        macros[name] = (n_args, body)
        out.append(tex[pos : m.start()])
        pos = j
    out.append(tex[pos:])
    return macros, "".join(out)


def _read_arg(tex: str, i: int) -> tuple[str, int]:
    while i < len(tex) and tex[i].isspace():
        i += 1
    if tex.startswith("{", i):
        return read_group(tex, i)
    if i < len(tex):
        return tex[i], i + 1
    raise CorpusError("macro argument missing at end of text")


def expand_macros(tex: str, macros: dict[str, tuple[int, str]]) -> str:
    """Expand the macros until nothing changes (at most 20 rounds: recursive definitions
    stop there instead of looping)."""
    if not macros:
        return tex
    names = sorted(macros, key=len, reverse=True)
    pattern = re.compile("(" + "|".join(re.escape(n) for n in names) + r")(?![A-Za-z@])")
    limit = _MAX_GROWTH * len(tex) + 1_000_000
    for _ in range(_MAX_EXPANSION_ROUNDS):
        out, pos, changed = [], 0, False
        for m in pattern.finditer(tex):
            if m.start() < pos:
                continue
            n_args, body = macros[m.group(1)]
            i, args = m.end(), []
            try:
                for _k in range(n_args):
                    arg, i = _read_arg(tex, i)
                    args.append(arg)
            except CorpusError:
                continue
            for k, arg in enumerate(args, 1):
                body = body.replace(f"#{k}", arg)
            out.append(tex[pos : m.start()] + body)
            pos, changed = i, True
        out.append(tex[pos:])
        tex = "".join(out)
        if len(tex) > limit:
            raise CorpusError(f"LaTeX macro expansion grows without bound (over {limit} "
                              f"characters): a macro expands into several copies of itself")
        if not changed:
            break
    return tex


def _split_sections(body: str) -> list[tuple[str, str]]:
    sections: list[tuple[str, str]] = []
    abstract = _ABSTRACT.search(body)
    if abstract:
        sections.append(("Abstract", abstract.group(1).strip()))
        body = body[: abstract.start()] + body[abstract.end() :]
    marks = list(_SECTION.finditer(body))
    front = body[: marks[0].start()] if marks else body
    if front.strip() and not marks:
        sections.append(("", front.strip()))
    for k, m in enumerate(marks):
        title, after = read_group(body, m.end() - 1)
        end = marks[k + 1].start() if k + 1 < len(marks) else len(body)
        sections.append((" ".join(title.split()), body[after:end].strip()))
    return sections


def clean_latex(tex: str) -> str:
    """Steps 4-6 of the module docstring on already inlined, comment-free source."""
    macros, tex = extract_macros(tex)
    tex = expand_macros(tex, macros)
    tex = _FLOAT_ENV.sub("", tex)
    begin = _BEGIN_DOC.search(tex)
    m = _BIB.search(tex, begin.end() if begin else 0)
    return tex[: m.start()] if m else tex


def load_latex(root: str | Path, *, title: str | None = None) -> Book:
    """A paper from an arXiv source folder (or a single ``.tex`` file)."""
    base = Path(root)
    if not base.exists():
        raise CorpusError(f"LaTeX source not found: {base}")
    main = base if base.is_file() else find_main_file(base)
    full = clean_latex(inline_includes(main, main.parent))
    parts = _BEGIN_DOC.split(full, maxsplit=1)
    preamble, body = (parts[0], parts[1]) if len(parts) == 2 else ("", full)
    found = re.search(r"\\title\s*(?:\[[^\]]*\])?\s*\{", preamble + body)
    paper_title = title or (
        " ".join(read_group(preamble + body, found.end() - 1)[0].split()) if found else main.stem
    )
    book_id = slugify(paper_title)
    return Book(
        id=book_id,
        title=paper_title,
        source=str(main),
        chapters=make_chapters(book_id, _split_sections(body)),
        metadata={"format": "latex", "main_file": main.name},
    )
