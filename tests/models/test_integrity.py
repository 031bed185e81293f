"""The log-probability integrity check (recitation.models.integrity): the invariants on
made-up answers, the scripted test double, the embedded model through `recitation check`
(with the repeated-passage figure computed again with torch), and `recitation serve` through
the openai backend, correct and with each --logprob-fault: each fault is caught, and by
which invariant is asserted."""

from __future__ import annotations

import asyncio
import json
import math
import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from recitation.cli import main
from recitation.models import integrity_invariants as inv
from recitation.models.base import Generation, TokenScores
from recitation.models.integrity import PROMPTS, REPEATED, SCORED_TEXTS, check_logprobs
from recitation.models.local import LocalModel
from recitation.models.scripted import ScriptedModel
from recitation.serve import ServerHandle, start_server
from recitation.serve.logprob_faults import FAULTS, LogprobFaultModel


def ts(lps: list[float], **kw: tuple[float, ...] | tuple[int, ...]) -> TokenScores:
    return TokenScores(tokens=tuple(f"t{i}" for i in range(len(lps) + 1)),
                       logprobs=tuple(lps), **kw)  # type: ignore[arg-type]


def outcome(results: list[inv.InvariantResult], name: str) -> str:
    return next(r.outcome for r in results if r.name == name)


# -- the invariants on made-up answers -------------------------------------------------------
def test_well_formed_catches_nan_positive_and_constant_values() -> None:
    good = inv.well_formed([ts([-0.5, -3.0, -1.2]), ts([-7.0, -0.1])])
    assert [r.outcome for r in good] == ["passed"] * 3
    bad = inv.well_formed([ts([math.nan, 0.5, 0.5])])
    assert [outcome(bad, n) for n in ("finite", "at_most_zero")] == ["failed", "failed"]
    flat = inv.well_formed([ts([-2.0] * 6)])
    assert outcome(flat, "not_constant") == "failed"
    short = TokenScores(tokens=("a", "b", "c"), logprobs=(-1.0,))  # one value missing
    assert outcome(inv.well_formed([short]), "finite") == "failed"


def test_same_numbers_prefix_and_top_consistency() -> None:
    a = ts([-1.0, -2.0, -3.0, -4.0])
    assert inv.same_numbers("repeatable", "", a, a).outcome == "passed"
    assert inv.same_numbers("repeatable", "", a, ts([-1.2, -2.2, -3.2, -4.2])
                            ).outcome == "failed"
    # bfloat16 in another batch shape: 0.051 nats on average on a correct organism
    assert inv.same_numbers("batch_invariant", "", a, ts([-1.06, -1.95, -3.06, -3.96])
                            ).outcome == "passed"
    full = ts([-1.0, -2.0, -3.0, -4.0, -5.0, -6.0])
    prefix = ts([-1.0, -2.0, -3.0, -9.0])  # the boundary token (-9) is left out
    assert inv.prefix_consistent(prefix, full).outcome == "passed"
    assert inv.prefix_consistent(ts([-1.5, -2.0, -3.0, -4.0]), full).outcome == "failed"
    ok = ts([-1.0, -0.2], top_logprob=(-0.5, -0.2), rank=(2, 1))
    assert inv.top_consistent([ok]).outcome == "passed"
    for bad in (ts([-1.0, -0.2], top_logprob=(-1.5, -0.2)),  # the top below the token's
                ts([-1.0, -0.2], top_logprob=(0.5, -0.2)),  # the top above 0
                ts([-1.0, -0.2], top_logprob=(-0.5, -0.1), rank=(2, 1))):  # rank 1, not top
        assert inv.top_consistent([bad]).outcome == "failed"
    assert inv.top_consistent([a]).outcome == "skipped"


def test_generation_is_aligned_from_the_end_and_greedy_tokens_ranked_first() -> None:
    gen = Generation(text=" x y z w", finish_reason="length", token_logprobs=(-9.0, -1.0,
                                                                             -0.5, -2.0, -0.1))
    back = ts([-4.0, -3.0, -8.0, -1.0, -0.5, -2.0, -0.1], rank=(5, 3, 2, 1, 1, 1, 1))
    assert inv.generation_matches([(gen, back)]).outcome == "passed"  # -9 vs -8: the join
    assert inv.greedy_is_top([(gen, back)]).outcome == "passed"
    later = ts([-4.0, -3.0, -8.0, -1.0, -1.0, -0.5, -2.0])  # one position late
    assert inv.generation_matches([(gen, later)]).outcome == "failed"
    second = ts([-4.0, -3.0, -8.0, -1.0, -0.5, -2.0, -0.1], rank=(1, 1, 1, 1, 2, 1, 1),
                top_logprob=(-1.0, -1.0, -1.0, -1.0, -0.2, -1.0, -0.1))
    assert inv.greedy_is_top([(gen, second)]).figure == 1.0
    stopped = Generation(text=" x", finish_reason="stop", token_logprobs=(-1.0, -0.1))
    assert inv.generation_matches([(stopped, back)]).outcome == "skipped"


# -- the scripted test double passes; a fault around it is caught -----------------------------
def test_the_scripted_model_passes_and_its_faults_are_caught() -> None:
    model = ScriptedModel()
    report = asyncio.run(check_logprobs(model))
    assert report.passed, report.failed
    assert report.score_calls == 7 and report.texts_scored == SCORED_TEXTS == len(model.scored)
    assert [r.text for r in model.requests] == list(PROMPTS) and report.generations == 2
    for fault, caught in {"offset": "repeat_predictable", "batch": "batch_invariant"}.items():
        failed = asyncio.run(check_logprobs(LogprobFaultModel(ScriptedModel(), fault))).failed
        assert caught in failed, (fault, failed)


def test_a_report_round_trips_through_json() -> None:
    report = asyncio.run(check_logprobs(ScriptedModel()))
    again = type(report).from_dict(json.loads(json.dumps(report.to_dict())))
    assert again == report


# -- the embedded model, through the command -------------------------------------------------
def check_json(spec: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, object]]:
    capsys.readouterr()
    code = main(["check", spec, "--json"])
    return code, json.loads(capsys.readouterr().out)


def figures(report: dict[str, object]) -> dict[str, tuple[str, float | None]]:
    return {r["name"]: (r["outcome"], r["figure"])  # type: ignore[index]
            for r in report["results"]}  # type: ignore[attr-defined]


@pytest.mark.model
def test_the_embedded_model_passes_every_invariant(capsys: pytest.CaptureFixture[str],
                                                   local_model: LocalModel) -> None:
    code, report = check_json("smollm2", capsys)
    got = figures(report)
    assert code == 0 and report["passed"] is True, got
    assert {o for o, _ in got.values()} == {"passed"}  # rank and top given: none skipped
    # the repeated passage's figure, computed again from the model's logits
    import torch

    loaded = local_model.load()
    ids = loaded.tokenizer(REPEATED, return_tensors="pt", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logp = torch.log_softmax(loaded.model(ids).logits[0, :-1].double(), -1)
    direct = logp.gather(-1, ids[0, 1:, None]).squeeze(-1).tolist()
    median = statistics.median(direct[-(len(direct) // 4):])
    assert abs(got["repeat_predictable"][1] - median) < 1e-3  # type: ignore[operator]
    assert median > -0.5 and statistics.median(direct[:len(direct) // 4]) < -5


# -- recitation serve, correct and faulty, through the openai backend -------------------------
@pytest.fixture
def served(request: pytest.FixtureRequest, local_model: LocalModel
           ) -> Iterator[tuple[ServerHandle, str | None]]:
    fault = request.param
    with start_server(LogprobFaultModel(local_model, fault) if fault else local_model) as h:
        yield h, fault


# what each fault fails, exactly where the calls' order decides nothing; the batch fault's
# answers depend on which request the server took before which, so there only what must fail
CAUGHT: dict[str | None, set[str]] = {
    None: set(), "shift": {"generation_matches_score"},
    "offset": {"repeat_predictable", "generation_matches_score"},
    "scale": {"generation_matches_score"}}
BATCH_MUST, BATCH_MAY = {"repeatable"}, {"repeatable", "batch_invariant", "prefix_consistent",
                                         "generation_matches_score"}


@pytest.mark.model
@pytest.mark.parametrize("served", [None, *FAULTS], indirect=True)
def test_serve_passes_and_each_logprob_fault_is_caught(
        served: tuple[ServerHandle, str | None], capsys: pytest.CaptureFixture[str]) -> None:
    handle, fault = served
    code, report = check_json(f"openai:smollm2@{handle.url}", capsys)
    got = figures(report)
    failed = {n for n, (o, _) in got.items() if o == "failed"}
    assert {n for n, (o, _) in got.items() if o == "skipped"} == {"top_consistent",
                                                                   "greedy_is_top"}
    assert code == (1 if failed else 0)  # the server gives no top log-prob or rank
    if fault == "batch":
        assert BATCH_MUST <= failed <= BATCH_MAY, got
    else:
        assert failed == CAUGHT[fault], got


FAULT_SERVER_TIMEOUT = 300


@pytest.mark.model
def test_the_serve_command_answers_wrong_numbers_with_logprob_fault(tmp_path: Path) -> None:
    """`recitation serve --logprob-fault offset` (a separate process) is caught by
    `recitation check` (another), exit code 1."""
    code = "from recitation.cli import main; raise SystemExit(main())"
    with open(tmp_path / "stderr.txt", "w") as err:
        proc = subprocess.Popen([sys.executable, "-c", code, "serve", "--port", "0",
                                 "--threads", "1", "--logprob-fault", "offset"],
                                stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "WRONG log-probabilities (--logprob-fault offset)" in line, \
            line + (tmp_path / "stderr.txt").read_text()
        url = line.split(" at ")[1].split()[0]
        check = subprocess.run([sys.executable, "-c", code, "check", f"openai:smollm2@{url}",
                                "--json"], capture_output=True, text=True,
                               timeout=FAULT_SERVER_TIMEOUT)
        assert check.returncode == 1, check.stderr
        results = json.loads(check.stdout)["results"]
        assert {r["name"] for r in results if r["outcome"] == "failed"} == CAUGHT["offset"]
    finally:
        proc.terminate()
        proc.wait(60)


def test_recitation_methods_lists_the_check_as_a_guard(capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    capsys.readouterr()
    assert main(["methods", "--kind", "guard", "--json"]) == 0
    guard = {g["name"]: g for g in json.loads(capsys.readouterr().out)}["logprob_check"]
    assert guard["kind"] == "guard"
    report = asyncio.run(check_logprobs(ScriptedModel()))  # the calls it states are made
    assert guard["calls"].startswith(f"{report.score_calls} score calls ({SCORED_TEXTS} ")
    assert main(["methods"]) == 0
    assert "logprob_check" in capsys.readouterr().out
