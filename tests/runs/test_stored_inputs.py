"""Runs rebuilt from their store: the finalize step at the end of every execute, the stored
work items and snapshot (nothing re-reads the user's files), the input fingerprint checked on
resume, and the one factory for secondary models."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from recitation.errors import ConfigError, MalformedResponseError
from recitation.models.base import GenerationRequest, TokenScores
from recitation.models.config import ModelConfig
from recitation.models.managed import Budget, ManagedModel
from recitation.models.pricing import Price, PriceTable
from recitation.models.scripted import ScriptedModel, echo_responder
from recitation.runs import runner
from recitation.runs.config import parse_config
from recitation.runs.factory import StandaloneContext, secondary_model
from recitation.runs.inputs import fingerprint_file
from recitation.runs.store import RunStore

# King James Bible (public domain)
MEMBERS = ["The LORD is my shepherd; I shall not want. He maketh me to lie down in green "
           "pastures: he leadeth me beside the still waters.",
           "In the beginning God created the heaven and the earth. And the earth was without "
           "form, and void; and darkness was upon the face of the deep.",
           "For God so loved the world, that he gave his only begotten Son, that whosoever "
           "believeth in him should not perish, but have everlasting life."]
CONTROLS = ["And Adah bare Jabal: he was the father of such as dwell in tents, and of such "
            "as have cattle. And his brother's name was Jubal.",
            "And the sons of Merari by their families; Mahli, and Mushi: these are the "
            "families of the Levites according to the house of their fathers.",
            "And Ahitub begat Zadok, and Zadok begat Ahimaaz, and Ahimaaz begat Azariah, and "
            "Azariah begat Johanan."]


def _jsonl(path: Path, texts: list[str]) -> str:
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n"
                            for i, t in enumerate(texts)))
    return str(path)


class FailingOn(ScriptedModel):
    """Scripted scores, except for texts containing ``marker`` (a malformed reply)."""

    def __init__(self, marker: str | None) -> None:
        super().__init__()
        self.marker = marker

    async def score(self, texts: list[str]) -> list[TokenScores]:
        if self.marker is not None and any(self.marker in t for t in texts):
            raise MalformedResponseError(f"garbage for '{self.marker}'")
        return await super().score(texts)


def detect_config(tmp_path: Path) -> Any:
    params = {"members": [_jsonl(tmp_path / "members.jsonl", MEMBERS)],
              "controls": [_jsonl(tmp_path / "controls.jsonl", CONTROLS)],
              "detectors": ["whitebox"], "n_bootstrap": 20}
    return parse_config({"job": "detect", "cache": False, "params": params,
                         "model": {"backend": "scripted", "batch_size": 1, "concurrency": 1,
                                   "max_attempts": 1}})


def use_backend(monkeypatch: pytest.MonkeyPatch, marker: str | None) -> None:
    monkeypatch.setattr("recitation.models.registry.build_backend",
                        lambda cfg: FailingOn(marker))


@pytest.fixture
def report_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts detect reports built (each: shift-guard permutations and bootstraps)."""
    from recitation.detect import results as report

    built: list[int] = []
    real = report.build_report

    def counting(records: list[dict[str, Any]], *args: Any, **kw: Any) -> dict[str, Any]:
        built.append(len(records))
        return real(records, *args, **kw)

    monkeypatch.setattr(report, "build_report", counting)
    return built


def test_a_resumed_detect_run_ends_with_a_complete_report_built_once_per_execute(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, report_builds: list[int],
        capsys: pytest.CaptureFixture[str]) -> None:
    from recitation.runs.console import execute_and_print

    run = runner.create_run(detect_config(tmp_path), tmp_path / "runs")
    use_backend(monkeypatch, "Mahli")  # one control fails: the run ends incomplete
    assert execute_and_print(run) == 4
    with RunStore(run) as store:
        partial = store.get_meta("detect_report")
        assert store.get_meta("status") == "incomplete"
    assert report_builds == [5]  # once, over the 5 stored samples; the table reused it
    assert (partial["n_members"], partial["n_controls"]) == (3, 2)
    assert "2 controls" in capsys.readouterr().out

    use_backend(monkeypatch, None)
    assert execute_and_print(run) == 0  # `recitation resume`
    assert report_builds == [5, 6]
    with RunStore(run) as store:
        report = store.get_meta("detect_report")
    assert (report["n_members"], report["n_controls"]) == (3, 3)
    assert report["detectors"]["loss"]["n_controls"] == 3
    assert "3 controls" in capsys.readouterr().out


def test_the_detect_command_builds_its_report_once(tmp_path: Path,
                                                   report_builds: list[int]) -> None:
    from recitation.cli import main

    runs = tmp_path / "runs"
    code = main(["detect", "--model", "scripted:target", "--detectors", "whitebox",
                 "--members", _jsonl(tmp_path / "m.jsonl", MEMBERS),
                 "--controls", _jsonl(tmp_path / "c.jsonl", CONTROLS),
                 "--bootstrap", "20", "--no-cache", "--runs-dir", str(runs)])
    assert code == 0 and report_builds == [6]
    (run,) = runs.iterdir()
    with RunStore(run) as store:
        assert store.get_meta("detect_report")["n_controls"] == 3


def test_a_budget_stop_stores_the_report_of_what_was_done(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          report_builds: list[int]) -> None:
    from recitation.models.integrity import check_logprobs

    check = ManagedModel(ScriptedModel())  # the integrity check's tokens come first
    asyncio.run(check_logprobs(check))
    cfg = detect_config(tmp_path)
    cfg = cfg.model_copy(update={"budget": cfg.budget.model_copy(
        update={"max_tokens": check.stats.usage.total + 60})})
    run = runner.create_run(cfg, tmp_path / "runs")
    use_backend(monkeypatch, None)
    out = asyncio.run(runner.execute(run))
    assert out.status == "budget_exhausted" and 0 < out.done_items < 6
    with RunStore(run) as store:
        report = store.get_meta("detect_report")
    assert report["n_members"] + report["n_controls"] == out.done_items
    assert report_builds == [out.done_items]


def test_a_changed_sample_file_is_refused_on_resume_and_the_run_is_untouched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = runner.create_run(detect_config(tmp_path), tmp_path / "runs")
    members = tmp_path / "members.jsonl"
    original = members.read_text()
    _jsonl(members, [MEMBERS[0], MEMBERS[1].replace("void", "empty"), MEMBERS[2]])
    use_backend(monkeypatch, None)
    with pytest.raises(ConfigError) as err:
        asyncio.run(runner.execute(run))
    msg = str(err.value)
    assert "params.members[0]" in msg and str(members.resolve()) in msg
    assert "changed since the run was created" in msg
    assert "1 work item(s) differ (member:members:1)" in msg
    with RunStore(run) as store:
        assert store.get_meta("status") == "created"
        assert store.done_items() == set() and store.calls() == []
    members.write_text(original)  # restored: the run resumes
    assert asyncio.run(runner.execute(run)).status == "completed"


def test_gone_inputs_resume_from_the_stored_items(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    run = runner.create_run(detect_config(tmp_path), tmp_path / "runs")
    use_backend(monkeypatch, "Mahli")
    assert asyncio.run(runner.execute(run)).status == "incomplete"
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    for name in ("members.jsonl", "controls.jsonl"):
        shutil.move(tmp_path / name, moved / name)
    use_backend(monkeypatch, None)
    out = asyncio.run(runner.execute(run))
    assert out.status == "completed" and out.done_items == 6
    with RunStore(run) as store:
        events = [e["message"] for e in store.events()]
        assert store.get_meta("detect_report")["n_controls"] == 3
    assert any("params.controls[0]" in m and "is gone" in m for m in events)
    table, _ = runner.summarize_run(run)  # read from the store alone
    assert "3 controls" in table.headline[0]


def test_an_older_run_without_stored_items_gets_them_on_its_next_execute(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    run = runner.create_run(detect_config(tmp_path), tmp_path / "runs")
    db = sqlite3.connect(run / "run.sqlite")
    db.execute("DELETE FROM items")
    db.execute("DELETE FROM meta WHERE key = 'input_files'")
    db.commit()
    db.close()
    use_backend(monkeypatch, None)
    assert asyncio.run(runner.execute(run)).done_items == 6
    with RunStore(run) as store:
        assert len(store.items()) == 6
        assert set(store.get_meta("input_files")) == {"params.members[0]",
                                                      "params.controls[0]"}


def test_a_folder_fingerprint_changes_with_any_file_in_it(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one.tex").write_text("first")
    (tmp_path / "a" / "two.tex").write_text("second")
    before = fingerprint_file(tmp_path / "a")
    assert before["files"] == 2 and before["bytes"] == 11
    (tmp_path / "a" / "two.tex").write_text("secund")
    assert fingerprint_file(tmp_path / "a")["sha256"] != before["sha256"]
    (tmp_path / "a" / "two.tex").write_text("second")
    assert fingerprint_file(tmp_path / "a") == before


# -- extract: export from the store alone ------------------------------------------------

# KJV, Ruth 1 (public domain)
RUTH = ("Now it came to pass in the days when the judges ruled, that there was a famine in the "
        "land. And a certain man of Bethlehemjudah went to sojourn in the country of Moab, he, "
        "and his wife, and his two sons.\n\nAnd the name of the man was Elimelech, and the "
        "name of his wife Naomi, and the name of his two sons Mahlon and Chilion, Ephrathites "
        "of Bethlehemjudah.")


def scripted_everything(req: GenerationRequest) -> str:
    from recitation.extract import prompts

    system = next((m.content for m in req.messages or () if m.role == "system"), "")
    return "Yes" if system.startswith(prompts.VERIFIER_SYSTEM) else echo_responder(req)


def test_extract_export_works_after_the_book_is_moved_away(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from recitation.cli import main
    from recitation.extract.cli import export_run

    book = tmp_path / "ruth.txt"
    book.write_text(f"RUTH\n\nCHAPTER 1\n\n{RUTH}\n", encoding="utf-8")
    monkeypatch.setattr("recitation.models.registry.build_backend",
                        lambda cfg: ScriptedModel(scripted_everything))
    cfg = parse_config({"job": "extract", "cache": False,
                        "model": {"backend": "scripted"},
                        "params": {"book": str(book), "methods": ["prefix", "dsp"],
                                   "summary": {"max_attempts": 1, "fallback_words": 20}}})
    run = runner.create_run(cfg, tmp_path / "runs")
    assert asyncio.run(runner.execute(run)).status == "completed"
    (before,) = export_run(run, str(tmp_path / "before.json"))
    shutil.move(book, tmp_path / "moved.txt")
    assert main(["extract", "--export", str(run), "--out", str(tmp_path / "after.json")]) == 0
    after = tmp_path / "after.json"
    assert after.read_bytes() == before.read_bytes()
    assert after.with_suffix(".attempts.jsonl").read_bytes() == \
        before.with_suffix(".attempts.jsonl").read_bytes()
    assert json.loads(after.read_text())  # a real extraction file, not an empty one
    table, _ = runner.summarize_run(run)  # the summary reads the stored book too
    assert {r[0] for r in table.rows} == {"prefix", "dsp"}


def test_a_book_changed_in_place_is_refused_on_resume(tmp_path: Path) -> None:
    book = tmp_path / "ruth.txt"
    book.write_text(f"RUTH\n\nCHAPTER 1\n\n{RUTH}\n", encoding="utf-8")
    cfg = parse_config({"job": "extract", "cache": False, "model": {"backend": "scripted"},
                        "params": {"book": str(book), "methods": ["dsp"]}})
    run = runner.create_run(cfg, tmp_path / "runs")
    book.write_text(f"RUTH\n\nCHAPTER 1\n\n{RUTH.replace('famine', 'feast')}\n")
    with pytest.raises(ConfigError, match=r"params\.book .*ruth\.txt\) changed"):
        asyncio.run(runner.execute(run))


# -- one factory for secondary models ------------------------------------------------------

def test_a_secondary_model_shares_the_targets_store_cache_budget_and_prices(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("recitation.models.registry.build_backend",
                        lambda cfg: ScriptedModel(name=cfg.model))
    store, cache = object(), object()
    target = ManagedModel(ScriptedModel(name="target"), store=store, cache=cache,  # type: ignore[arg-type]
                          budget=Budget(max_tokens=10),
                          prices=PriceTable({"judge": Price(1.0, 2.0)}))
    judge = secondary_model(ModelConfig(backend="scripted", model="judge", concurrency=3,
                                        max_attempts=2), target)
    assert (judge.store, judge.cache, judge.budget, judge.prices) == (
        store, cache, target.budget, target.prices)
    assert (judge.limits.concurrency, judge.retry.max_attempts) == (3, 2)
    assert judge.name == "judge"


def test_outside_the_runner_a_raw_target_gets_managed_secondaries(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("recitation.models.registry.build_backend",
                        lambda cfg: ScriptedModel(name=cfg.model))
    raw = ScriptedModel(name="target")
    ctx = StandaloneContext(raw, seed=0)
    helper = ctx.model_for(ModelConfig(backend="scripted", model="helper"))
    assert isinstance(helper, ManagedModel) and helper.name == "helper"
    assert ctx.model_for(ModelConfig(backend="scripted", model="helper")) is helper
    assert ctx.model_for(ModelConfig(backend="scripted", model="target")) is raw
    asyncio.run(helper.generate([GenerationRequest(prompt="a b c", max_tokens=2)]))
    assert ctx.stats().backend_calls == 1


def test_the_extract_helper_outside_the_runner_shares_the_targets_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from recitation.extract.job import ExtractJob
    from recitation.runs.jobs import make_job

    monkeypatch.setattr("recitation.models.registry.build_backend",
                        lambda cfg: ScriptedModel(scripted_everything, name=cfg.model))
    book = tmp_path / "ruth.txt"
    book.write_text(f"RUTH\n\nCHAPTER 1\n\n{RUTH}\n", encoding="utf-8")
    job = make_job("extract", {"book": str(book), "methods": ["dsp"],
                               "helper": {"backend": "scripted", "model": "helper"},
                               "summary": {"max_attempts": 1, "fallback_words": 20}}, 0)
    assert isinstance(job, ExtractJob)
    target = ManagedModel(ScriptedModel(scripted_everything, name="target"))
    asyncio.run(job.run_items(job.items(), target))
    helper = job._models["helper"]
    assert isinstance(helper, ManagedModel) and helper.budget is target.budget
    assert helper.stats.backend_calls > 0 and target.budget.tokens > 0
