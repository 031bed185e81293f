"""The commands: each probe and the task make a run; ``task analyse`` reads the runs."""

from __future__ import annotations

from pathlib import Path

from recitation.cli import main
from recitation.runs.runner import list_runs

TINY = str(Path(__file__).parent / "data" / "tiny_novel")


def test_probe_task_and_analyse_commands(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    common = ["--novels", TINY, "--model", "scripted:echo", "--runs-dir", str(runs)]
    assert main(["probe", "name-cloze", *common, "--n", "2"]) == 0
    assert main(["probe", "csg", *common, "--n", "1"]) == 0
    assert main(["probe", "contamination", *common, "--fraction", "0.5"]) == 0
    assert main(["task", "quote-attribution", *common, "--chunk-tokens", "64",
                 "--stride-tokens", "16", "--min-quotes", "1"]) == 0
    found = list_runs(runs)
    assert sorted(r["job"] for r in found) == ["contamination", "csg", "name_cloze",
                                               "quote_attribution"]
    out = tmp_path / "report.md"
    assert main(["task", "analyse", *[r["run_id"] for r in found], "--runs-dir", str(runs),
                 "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "| tiny_novel | 1 |" in text and "name_cloze" in text and "min_k_10" in text
    assert out.with_suffix(".json").is_file()
    assert main(["probe", "csg", "--novels", str(tmp_path / "nowhere"), "--model",
                 "scripted:echo", "--runs-dir", str(runs)]) == 1  # a clear error


def test_task_quote_attribution_defaults_are_the_authors(tmp_path: Path) -> None:
    """`task quote-attribution`: 2000 new tokens, unwrapped passages and sub-quotes unless
    told otherwise (`--max-new-tokens`, `--no-unwrap`, `--unit quote`)."""
    from recitation.runs.store import RunStore

    runs = tmp_path / "runs"
    common = ["--novels", TINY, "--model", "scripted:echo", "--runs-dir", str(runs),
              "--chunk-tokens", "64", "--stride-tokens", "16"]
    assert main(["task", "quote-attribution", *common]) == 0
    assert main(["task", "quote-attribution", *common, "--max-new-tokens", "300",
                 "--no-unwrap", "--unit", "quote"]) == 0
    got = set()
    for r in list_runs(runs):
        with RunStore(Path(r["path"])) as store:
            p = (store.get_meta("config") or {})["params"]
        got.add((p["max_new_tokens"], p["unwrap"], p["unit"]))
    assert got == {(2000, True, "subquote"), (300, False, "quote")}
