"""The arXiv LaTeX loader on source trees written by the tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from recitation.corpus.latex import expand_macros, extract_macros, load_latex, strip_comments
from recitation.errors import CorpusError


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


MAIN = r"""\documentclass{article}
% \input{commented_out}
\newcommand{\model}{RECAP}
\newcommand\twice[1]{#1 and #1}
\def\pair#1#2{(#1, #2)}
\title{Extracting   \model}
\begin{document}
\maketitle
\begin{abstract}
We study \model{} at 50\% recall.
\end{abstract}
\section{Introduction}
Intro \twice{x} \pair{a}{b}. % trailing comment
\input{sections/method}
\begin{figure*}[t]\includegraphics{fig.png}\caption{A figure}\end{figure*}
\section*{Results}
\include{sections/results}
\begin{comment}
hidden
\end{comment}
\bibliography{refs}
\section{After the bibliography}
\end{document}
"""


def test_full_tree(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "paper.tex": MAIN,
            "macros.tex": "\\newcommand{\\unused}{x}",  # no \begin{document}: not the main file
            "sections/method.tex": "\\section{Method}\nWe use \\model.\n\\input{sections/detail}",
            "sections/detail.tex": "Details.",
            "sections/results.tex": "Results here.\n\\begin{table}\\caption{T}\\end{table}",
        },
    )
    book = load_latex(root)
    assert book.title == "Extracting RECAP"
    assert book.metadata["main_file"] == "paper.tex"
    assert [c.title for c in book.chapters] == ["Abstract", "Introduction", "Method", "Results"]
    texts = {c.title: c.text for c in book.chapters}
    assert texts["Abstract"] == r"We study RECAP{} at 50\% recall."
    assert texts["Introduction"] == "Intro x and x (a, b)."
    assert texts["Method"] == "We use RECAP.\n\nDetails."
    assert texts["Results"] == "Results here."
    assert "hidden" not in book.text and "figure" not in book.text and "After" not in book.text


def test_main_file_choice_prefers_documentclass(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "a_standalone.tex": "\\begin{document}x\\end{document}",
            "z_main.tex": "\\documentclass{article}\\begin{document}"
            "\\section{S}body\\end{document}",
        },
    )
    assert load_latex(root).metadata["main_file"] == "z_main.tex"


def test_subfile_contributes_only_its_body(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "main.tex": "\\documentclass{article}\\begin{document}"
            "\\section{A}\\subfile{part}\\end{document}",
            "part.tex": "\\documentclass[main.tex]{subfiles}\n"
            "\\begin{document}\nPart body.\n\\end{document}",
        },
    )
    book = load_latex(root)
    assert [c.text for c in book.chapters] == ["Part body."]


def test_inclusion_cycle_is_an_error(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "main.tex": "\\documentclass{article}\\begin{document}\\input{a}\\end{document}",
            "a.tex": "A \\input{b}",
            "b.tex": "B \\input{a.tex}",
        },
    )
    with pytest.raises(CorpusError, match="cycle"):
        load_latex(root)


def test_missing_include_is_skipped_and_no_main_is_an_error(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {"main.tex": "\\documentclass{x}\\begin{document}\\input{gone}Text\\end{document}"},
    )
    assert "Text" in load_latex(root).text
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.tex").write_text("no document here")
    with pytest.raises(CorpusError, match="begin"):
        load_latex(empty)


def test_comments_and_macros() -> None:
    assert strip_comments("a % c\nb \\% kept % gone") == "a \nb \\% kept "
    macros, rest = extract_macros(r"\newcommand{\a}[2]{#2-#1}\renewcommand*\b{\a{1}{2}}X")
    assert rest == "X" and macros[r"\a"] == (2, "#2-#1")
    assert expand_macros(r"\b \bb \a xy", macros) == r"2-1 \bb y-x"
    loop = {r"\r": (0, r"\r!")}
    assert expand_macros(r"\r", loop).count("!") == 20  # recursion stops
