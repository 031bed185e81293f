"""One verdict table for every format: ``report.json``'s ``verdict_table``, the Markdown and
HTML tables, ``compare`` and the console table print the same cells, and a value the audit
does not have reads "n/a" in all of them (control flow on the scripted model)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

from recitation.audit.run import AuditSettings, create_audit, execute_audit
from recitation.cli import main
from recitation.report.table import MISSING, VERDICT_COLUMNS, fmt, of, pair


class _Rows(HTMLParser):
    """The cells of the table with id ``verdict-table``."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._in = self._cell = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self._in = dict(attrs).get("id") == "verdict-table"
        elif self._in and tag == "tr":
            self.rows.append([])
        elif self._in and tag in ("td", "th"):
            self._cell = True
            self.rows[-1].append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._in = False
        elif tag in ("td", "th"):
            self._cell = False

    def handle_data(self, data: str) -> None:
        if self._in and self._cell:
            self.rows[-1][-1] += data


def _passages(path: Path, stem: str, n: int) -> Path:
    path.write_text("".join(json.dumps({"id": f"{stem}{i}", "text": " ".join(
        f"{stem}{i}w{j}" for j in range(30))}) + "\n" for i in range(n)), encoding="utf-8")
    return path


def test_every_format_prints_the_same_verdict_table(tmp_path: Path) -> None:
    text = _passages(tmp_path / "text.jsonl", "t", 4)
    ctl = _passages(tmp_path / "ctl.jsonl", "c", 10)
    s = AuditSettings(passage_words=30, pearl=False, cache=False, n_bootstrap=0,
                      recap_passages=0, null_model=None)
    with_ctl = create_audit([str(text)], ["scripted:echo"], [str(ctl)], s,
                            runs_dir=tmp_path / "runs")
    without = create_audit([str(text)], ["scripted:echo"], [], s, runs_dir=tmp_path / "runs")
    for folder in (with_ctl, without):
        execute_audit(folder, say=lambda _: None)
        assert main(["report", str(folder)]) == 0
        f = json.loads((folder / "report.json").read_text(encoding="utf-8"))
        table = f["verdict_table"]
        assert table["columns"] == VERDICT_COLUMNS and len(table["rows"]) == 1
        md = (folder / "report.md").read_text(encoding="utf-8")
        head = "| " + " | ".join(VERDICT_COLUMNS) + " |"
        md_row = md.split(head, 1)[1].splitlines()[2]
        cells = [c.strip() for c in md_row.strip("|").split(" | ")]
        assert [cells[0], cells[1].strip("*"), *cells[2:]] == table["rows"][0]
        parser = _Rows()
        parser.feed((folder / "report.html").read_text(encoding="utf-8"))
        assert parser.rows == [VERDICT_COLUMNS, table["rows"][0]]
        out = tmp_path / f"cmp-{folder.name}"
        assert main(["compare", str(folder), "--out", str(out)]) == 0
        (row,) = json.loads((out / "compare.json").read_text(encoding="utf-8"))["rows"]
        assert row[1:1 + len(VERDICT_COLUMNS)] == table["rows"][0]
    # with controls: every cell filled; without: the controls' cells and the detectors say
    # "n/a", the same string in every format (no "-" or en dash)
    full = json.loads((with_ctl / "report.json").read_text("utf-8"))["verdict_table"]["rows"][0]
    empty = json.loads((without / "report.json").read_text("utf-8"))["verdict_table"]["rows"][0]
    col = {name: i for i, name in enumerate(VERDICT_COLUMNS)}
    assert MISSING not in full[:6] and re.fullmatch(r"0/10", full[col["controls reproduced"]])
    assert empty[col["controls reproduced"]] == MISSING and empty[-1] == MISSING
    assert empty[col["longest span (text / controls)"]].endswith(f"/ {MISSING}")
    # what each verdict rests on, with its error rate; none without controls or a null
    assert full[col["evidence (error rate)"]].startswith(
        "reproduction and detectors against controls (family-wise error at most 0.05 "
        "(Bonferroni over ")
    assert empty[col["evidence (error rate)"]] == MISSING
    assert not any(c in ("-", "–") or "–" in c for c in empty + full)


def test_the_formatters() -> None:
    assert [fmt(None), fmt(0.123456), fmt(7), fmt(1234)] == [MISSING, "0.123", "7", "1234"]
    assert [of(3, 4), of(None, 4), of(0, None), of(0, 0)] == ["3/4", MISSING, MISSING, MISSING]
    assert pair(0.5, None) == f"0.5 / {MISSING}"


def test_chart_labels_leave_the_endpoint_out() -> None:
    from recitation.report.table import short_spec

    assert short_spec("openai:m@http://127.0.0.1:8011/v1") == "openai:m"
    assert short_spec("vllm:x@localhost:8000") == "vllm:x"
    assert short_spec("smollm2@cuda:1") == "smollm2@cuda:1"  # a device is kept
    assert short_spec("organism:quick:epoch2") == "organism:quick:epoch2"
