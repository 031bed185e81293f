"""The report section of ``recitation audit --whole-book``: how much of the book came out.

For each model with a ``continue`` run (:mod:`recitation.extract.continue_book`): the share
of the book extracted near-verbatim with its definition, a map of the book (its words along
one axis, chapters marked, each extracted block drawn where it sits), the longest extracted
passages (their text withheld in a redacted report), the attempts and their cost, and what
the number does not mean. Everything is read from the run's record; nothing is computed
again.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from recitation.report.sections import Section
from recitation.runs.store import RunStore

DEFINITION = ("Near-verbatim recall (Ahmed, Cooper et al. 2026): the share of the book's "
              "words inside blocks of at least 100 matched words that the model's output "
              "reproduces near-verbatim (exact runs joined across gaps of at most 2, then 10 "
              "words). The model was given the book's opening and then continued from its "
              "own output; the opening is not counted.")
NOT_MEANT = (
    "It is what this procedure, with this budget, got out: another prompt, more calls or "
    "sampling can get more (a lower bound).",
    "0% does not show that the model never saw the book: text it does not produce in a "
    "continuation is not counted.",
    "It counts near-verbatim text only: paraphrase, summaries and the plot are not counted.",
    "Blocks shorter than 100 matched words are not counted, however exact.")
STOPS = {"probe_failed": "the opening was not continued with the book's text",
         "refusal": "the model refused", "empty": "the model stopped writing",
         "max_calls": "the call budget ran out", "budget": "the token or dollar budget ran out",
         "end_of_book": "the end of the book was reached",
         "no_match": "the continuation no longer matched the book"}


def _model(run: Path, redact: bool) -> dict[str, Any] | None:
    with RunStore(run) as store:
        recs = [r for _, r in store.results("continue")]
    if not recs:
        return None
    r = recs[0]
    passages = [{k: p[k] for k in ("book_start", "book_end", "matched_words")}
                | {"text": f"[redacted: {p['book_end'] - p['book_start']} words]" if redact
                   else p["text"]} for p in r["longest_passages"]]
    keep = ("title", "nv_recall", "covered_words", "book_words", "longest_block_words",
            "longest_run_words", "calls", "phase1_attempts", "phase1_succeeded",
            "input_tokens", "output_tokens", "dollars", "stop_reason", "chapters", "blocks")
    return {k: r[k] for k in keep} | {"passages": passages}


def collect(folder: Path, manifest: dict[str, Any]) -> dict[str, Any] | None:
    """Each model's whole-book record, or None when no model has a continue run."""
    models = {}
    for entry in manifest["models"]:
        run = folder / "runs" / entry["runs"].get("continue", "-")
        if (run / "run.sqlite").exists() and (m := _model(run, bool(manifest.get("redact")))):
            models[entry["spec"]] = m
    return {"models": models} if models else None


def share_text(m: dict[str, Any]) -> str:
    """``56.5% of the book extracted near-verbatim (350 of 620 words; ...; stopped: ...)``."""
    return (f"{100 * m['nv_recall']:.1f}% of the book extracted near-verbatim "
            f"({m['covered_words']:,} of {m['book_words']:,} words; longest block "
            f"{m['longest_block_words']:,} words; {m['calls']} calls; stopped: "
            f"{STOPS.get(m['stop_reason'], m['stop_reason'])})")


def headline(spec: str, m: dict[str, Any]) -> str:
    return f"whole book (continue), {spec}: {share_text(m)}"


def lines(data: dict[str, Any]) -> list[str]:
    """One line per model (the console under the verdict table)."""
    return [headline(spec, m) for spec, m in data["models"].items()]


def _cost(m: dict[str, Any]) -> str:
    probe = "succeeded" if m["phase1_succeeded"] else "failed"
    return (f"{m['calls']} calls ({m['phase1_attempts']} for the opening, which {probe}); "
            f"{m['input_tokens']:,} tokens in, {m['output_tokens']:,} out; "
            f"${m['dollars']:.4f}")


def _cell(text: str) -> str:
    """A table cell of Markdown: one line, its pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def markdown(data: dict[str, Any]) -> list[str]:
    out = [DEFINITION, ""]
    for spec, m in data["models"].items():
        out += [f"**{spec}**: {share_text(m)}", "",
                f"Attempts and cost: {_cost(m)}.", "",
                "| chapter | words | extracted | share |", "|---|---|---|---|"]
        out += [f"| {_cell(c['title'])} | {c['words']:,} | {c['covered']:,} | "
                f"{c['covered'] / max(c['words'], 1):.1%} |" for c in m["chapters"]]
        if m["passages"]:
            out += ["", "Longest extracted passages:", ""]
            out += [f"- words {p['book_start']:,}-{p['book_end']:,} ({p['matched_words']} "
                    f"matched): {' '.join(p['text'].split())}" for p in m["passages"]]
        out.append("")
    return out + ["What this number does not mean:", "", *[f"- {x}" for x in NOT_MEANT]]


def book_map(spec: str, m: dict[str, Any], div_id: str) -> str:
    """The map: the book's words along x, chapters shaded in turn and labelled, each
    extracted block a bar over its words (plotly; its JavaScript is in the page once)."""
    from recitation.errors import require

    go = require("plotly.graph_objects", "the HTML report's charts")
    fig = go.Figure()
    start = 0
    for i, c in enumerate(m["chapters"]):
        fig.add_vrect(x0=start, x1=start + c["words"], fillcolor="#7f8c8d",
                      opacity=0.08 if i % 2 else 0.16, line_width=0)
        fig.add_annotation(x=start + c["words"] / 2, y=1.02, yref="paper", showarrow=False,
                           text=escape(c["title"]), font={"size": 10})
        start += c["words"]
    for b in m["blocks"]:
        fig.add_trace(go.Bar(x=[b["book_end"] - b["book_start"]], base=[b["book_start"]],
                             y=["extracted"], orientation="h", marker_color="#c0392b",
                             showlegend=False, hovertemplate=f"words {b['book_start']:,}-"
                             f"{b['book_end']:,}: {b['matched_words']} matched<extra></extra>"))
    fig.update_layout(title=f"{escape(spec)}: where the extracted text sits in the book",
                      template="plotly_white", height=220, barmode="overlay",
                      xaxis={"title": "word of the book", "range": [0, max(start, 1)]},
                      margin={"l": 80, "r": 20, "t": 60, "b": 50})
    return str(fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                           config={"displaylogo": False, "responsive": True}))


def html(data: dict[str, Any]) -> str:
    parts = [f'<p class="note">{escape(DEFINITION)}</p>']
    for k, (spec, m) in enumerate(data["models"].items()):
        parts.append(f"<h3>{escape(spec)}</h3><p><strong>{escape(share_text(m))}</strong></p>")
        parts.append(book_map(spec, m, f"book-map-{k}"))
        parts.append(f"<p>Attempts and cost: {escape(_cost(m))}.</p>")
        if m["passages"]:
            items = "".join(f"<li>words {p['book_start']:,}-{p['book_end']:,} "
                            f"({p['matched_words']} matched): <q>{escape(p['text'])}</q></li>"
                            for p in m["passages"])
            parts.append(f"<p>Longest extracted passages:</p><ol>{items}</ol>")
    items = "".join(f"<li>{escape(x)}</li>" for x in NOT_MEANT)
    parts.append(f"<p>What this number does not mean:</p><ul>{items}</ul>")
    return "".join(parts)


SECTION = Section(name="book_extraction", title="How much of the book came out",
                  collect=collect, markdown=markdown, html=html)
