"""The method registry (recitation.methods) and its contract, over EVERY registered method:

- it names a paper that exists: a file of ../shared/papers with the cited section headings,
  or an "Author et al. YEAR" citation;
- its access is a known value, and its registry line agrees with its module's metadata;
- it runs through its real job (DetectJob / ExtractJob / PrefixProbeJob, that method alone)
  on scripted models and writes what its metadata says, in the shared schema;
- it refuses clearly (ConfigError, or a recorded error / skip reason naming what is missing)
  when an access it needs is missing (e.g. a black-box backend asked for log-probabilities).

Also: ``recitation methods --json`` lists them all, the CLI choices and pydantic literals equal
the registry, the docs' method table is the registry's, and a new score-based detector
family is one module and one registry line (a toy family runs through the job).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import subprocess
import sys
import typing
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from recitation import methods
from recitation.detect.samples import Sample
from recitation.detect.scoring import DetectorScore, SampleResult, ScoringContext
from recitation.errors import ConfigError
from recitation.extract import prompts
from recitation.methods import Access, Calls, MethodInfo
from recitation.models.base import Capabilities, GenerationRequest, Model, TokenScores
from recitation.models.integrity import DASHWOOD, SCORED_TEXTS
from recitation.models.scripted import ScriptedModel, echo_responder
from recitation.runs.jobs import make_job

REPO = Path(__file__).resolve().parents[1]
PAPERS = REPO.parent / "shared" / "papers"
ALL = methods.names()

# -- scripted models -------------------------------------------------------------------------


class WordTokenizer:
    """Whitespace words as tokens (what ScriptedModel.score names), ids assigned on sight."""

    vocab_size = 4096

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def tokens(self, text: str) -> list[str]:
        return text.split()

    def encode(self, text: str) -> list[int]:
        return [self.ids.setdefault(w, len(self.ids)) for w in text.split()]

    def decode(self, ids: list[int]) -> str:
        words = {i: w for w, i in self.ids.items()}
        return " ".join(words.get(i, f"w{i}") for i in ids)


class WhiteBoxModel(ScriptedModel):
    """Everything a method may ask for: log-probabilities with the vocabulary mean, std and
    top token, and a tokenizer."""

    capabilities = Capabilities(logprobs=True, full_distribution=True, tokenizer=True)

    def __init__(self, responder: Any = echo_responder, name: str = "scripted") -> None:
        super().__init__(responder, name=name)
        self._tok = WordTokenizer()

    def tokenizer(self) -> WordTokenizer:  # type: ignore[override]
        return self._tok

    async def score(self, texts: list[str]) -> list[TokenScores]:
        out = await super().score(texts)
        return [replace(ts, mean_logprob=tuple(-3.0 for _ in ts.logprobs),
                        std_logprob=tuple(1.5 for _ in ts.logprobs),
                        top_logprob=tuple(max(-0.5, lp) for lp in ts.logprobs)) for ts in out]


def job_scored(model: ScriptedModel) -> list[str]:
    """The texts the job scored, less the log-probability integrity check's, made first."""
    first = model.scored[:1] == [DASHWOOD]
    return model.scored[SCORED_TEXTS:] if first else model.scored


class BlackBox(ScriptedModel):
    """An API that generates but returns no log-probabilities (as Anthropic's)."""

    capabilities = Capabilities(logprobs=False)


class NoGeneration(WhiteBoxModel):
    capabilities = Capabilities(chat=False, completion=False, logprobs=True)


# -- public-domain texts (KJV) ---------------------------------------------------------------
MEMBERS = ["The LORD is my shepherd; I shall not want. He maketh me to lie down in green "
           "pastures: he leadeth me beside the still waters. He restoreth my soul.",
           "In the beginning God created the heaven and the earth. And the earth was without "
           "form, and void; and darkness was upon the face of the deep."]
CONTROLS = ["Consider the snow upon the high places, how it lieth still all the winter long "
            "and maketh no sound, yet it watereth the gardens below.",
            "Remember the mapmaker, who drew the rivers and the roads of a country he had "
            "never seen, and men walked by his lines and were not lost.",
            "The lamp of the watchman burned until the morning, and the city slept, and no "
            "enemy came over the wall in all that long night."]
CH1 = ("In the beginning God created the heaven and the earth. And the earth was without form, "
       "and void; and darkness was upon the face of the deep. And the Spirit of God moved upon "
       "the face of the waters.")


def _jsonl(path: Path, texts: list[str]) -> str:
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)))
    return str(path)


def detect_params(info: MethodInfo, tmp_path: Path) -> dict[str, Any]:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("And God said, Let there be light: and there was light.\n\n"
                      "And God saw the light, that it was good.")
    p: dict[str, Any] = {
        "members": [_jsonl(tmp_path / "m.jsonl", MEMBERS)],
        "controls": [_jsonl(tmp_path / "c.jsonl", CONTROLS)],
        "detectors": [info.family], "n_bootstrap": 10, "recall_shots": 1,
        "dcpdd_corpus": str(corpus), "max_intensity": 1, "outputs": 1, "temperature": 0.0,
        "bitflip_scale": "utf8-percent", "max_new_tokens": 8}
    if info.family == "pearl":
        p["perturbations"] = [info.name.removeprefix("pearl_")]
    if info.name in ("reference", "ezmia"):
        p["reference_model"] = {"backend": "scripted", "model": "reference"}
    if info.name == "camia":  # 30% of the controls calibrate: at least 3 of 10
        more = [f"{c} On day {n} the scribe wrote it again." for n, c in
                enumerate(CONTROLS * 3, start=2)][:7]
        p["controls"] = [_jsonl(tmp_path / "c.jsonl", CONTROLS + more)]
    return p


def helper_reply(req: GenerationRequest) -> str:
    system = next((m.content for m in req.messages or () if m.role == "system"), "")
    user = (req.messages or ())[-1].content if req.messages else ""
    if system.startswith(prompts.VERIFIER_SYSTEM):
        return "No" if "Response: I cannot" in user else "Yes"
    if system.startswith("You will be given a full book chapter"):
        return json.dumps({"events": [
            {"title": "Creation", "characters": ["God"], "detailed_summary": ["the start"],
             "segmentation_boundaries": {"first_sentence": "In the beginning God created "
                                         "the heaven and the earth.", "last_sentence": ""}}]})
    if system.startswith("You are analyzing"):
        return "2. MISSING ELEMENTS:\n- the later parts of the passage are missing"
    return "I cannot say."


def target_reply(req: GenerationRequest) -> str:
    """Refuses the DSP prompt, answers the jailbreak in part, the refinement in full."""
    msgs = req.messages or ()
    system = next((m.content for m in msgs if m.role == "system"), "")
    if any("Leverage these new informations" in m.content for m in msgs):
        return CH1
    if system.startswith(prompts.JAILBREAK_SYSTEM[:40]):
        return "In the beginning God created the heaven and the earth."
    if system.startswith(prompts.EXTRACTION_SYSTEM[:40]):
        return "I cannot help with reproducing that text."
    return "And the earth was without form, and void."


def extract_params(name: str, tmp_path: Path) -> dict[str, Any]:
    book = tmp_path / "genesis.txt"
    book.write_text(f"GENESIS\n\nCHAPTER 1\n\n{CH1}\n", encoding="utf-8")
    return {"book": str(book), "chapters": [1], "methods": [name],
            "summary": {"max_attempts": 1, "fallback_words": 20}, "recap": {"max_rounds": 1},
            "filter": {"time_budget_s": 1, "threshold": 0.0, "chunk_tokens": 32,
                       "stride": 16, "eval_masks": 1}}


def run(job: Any, model: Model) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = asyncio.run(job.run_items(job.items(), model))
    return out


def run_method(name: str, tmp_path: Path, model: Model) -> tuple[Any, list[dict[str, Any]]]:
    """The method alone through its real job on ``model`` (helper and judge scripted)."""
    info = methods.method(name)
    if info.job == "detect":
        job = make_job("detect", detect_params(info, tmp_path), 0)
        return job, run(job, model)
    if info.job == "extract":
        from recitation.extract.export import event_records

        job = make_job("extract", extract_params(name, tmp_path), 0)
        helper = ScriptedModel(helper_reply, name="helper")
        job.use_models(helper=helper, judge=helper)  # type: ignore[attr-defined]
        records = run(job, model)
        return job, event_records([(str(i), r) for i, r in enumerate(records)])
    if info.job == "trace":
        return trace_method(tmp_path, model)
    if info.job == "continue":  # a two-chapter book; the echo model repeats its prompt
        book = tmp_path / "book.txt"
        book.write_text(f"CHAPTER I\n\n{CH1}\n\nCHAPTER II\n\n{CONTROLS[0]}\n")
        job = make_job("continue", {"book": str(book), "mode": "completion",
                                    "max_calls": 3, "opening_words": 40}, 0)
        return job, run(job, model)
    if info.job == "propme":
        return propme_method(name, tmp_path, model)
    if info.job in ("name_cloze", "csg", "quote_attribution",
                    "contamination"):  # a tiny PDNC-format novel
        novel = str(REPO / "tests" / "probes" / "data" / "tiny_novel")
        extra = {"name_cloze": {"n": 2, "min_tokens": 8}, "csg": {"n": 1},
                 "quote_attribution": {"chunk_tokens": 64, "stride_tokens": 16},
                 "contamination": {"fraction": 1.0}}[info.job]
        job = make_job(info.job, {"novels": [novel], **extra}, 0)
        return job, run(job, model)
    assert info.job == "prefix_probe", info.job
    job = make_job("prefix_probe", {"passages": [{"ref": "John 3:16", "group": "famous"},
                                                 {"ref": "Genesis 1:1", "group": "famous"}]}, 0)
    return job, run(job, model)


def trace_method(tmp_path: Path, model: Model, *, index: bool = True
                 ) -> tuple[Any, list[dict[str, Any]]]:
    """A tracer on a byte-level index of the members and generations that copy them."""
    from recitation.trace.build import build_index
    from recitation.trace.sources import SourceDoc

    params: dict[str, Any] = {"generations": _jsonl(tmp_path / "g.jsonl", [CH1, CONTROLS[0]]),
                              "engine": "numpy"}
    if index:
        build_index([SourceDoc(t) for t in [*MEMBERS, CH1]], tmp_path / "index")
        params["index"] = [str(tmp_path / "index")]
    job = make_job("trace", params, 0)
    return job, run(job, model)


def propme_method(name: str, tmp_path: Path, model: Model) -> tuple[Any, list[dict[str, Any]]]:
    """A PROPME prompt set on a byte-level index of the members and controls; the helper
    writes two prompts."""
    from recitation.trace.build import build_index
    from recitation.trace.sources import SourceDoc

    build_index([SourceDoc(t) for t in [*MEMBERS, CH1, *CONTROLS]], tmp_path / "index")
    job = make_job("propme", {"index": [str(tmp_path / "index")], "engine": "numpy", "n": 2,
                              "prefix_words": 6, "sets": [name.removeprefix("propme_")]}, 0)
    job.use_helper(ScriptedModel(  # type: ignore[attr-defined]
        lambda req: json.dumps(["Write a psalm about still waters.",
                                "Describe the first day of the world."]), name="helper"))
    return job, run(job, model)


def _path(record: dict[str, Any], dotted: str) -> Any:
    value: Any = record
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


# -- the registry ---------------------------------------------------------------------------


def test_every_method_of_the_issue_is_registered() -> None:
    from recitation.detect.perturb import ALL_PERTURBATIONS

    want = {"prefix", "dsp", "dsp_jailbreak", "recap", "recap_filter", "loss", "zlib",
            "lowercase", "min_k", "min_k_pp", "reference", "recall", "dcpdd"}
    assert want <= set(ALL)
    assert {n for n in ALL if n.startswith("pearl_")} == {f"pearl_{p}" for p in
                                                          ALL_PERTURBATIONS}
    # the registry's order is its table's, built-in first (plug-ins after)
    assert ALL[:len(methods.METHODS)] == list(methods.METHODS)


def test_the_registry_imports_no_method_code() -> None:
    code = ("import sys; from recitation import methods; methods.names(); "
            "methods.families('detector'); print(sorted(m for m in sys.modules if "
            "m.startswith(('recitation.detect', 'recitation.extract'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_unknown_names_get_a_did_you_mean() -> None:
    with pytest.raises(ConfigError, match="did you mean 'min_k'"):
        methods.method("min_kk")
    with pytest.raises(ConfigError, match="did you mean 'recall'"):
        methods.check_family("detector", "recal", "detectors")
    with pytest.raises(ConfigError, match="did you mean 'recall'"):
        make_job("detect", {"detectors": ["recal"]}, 0)


def test_a_registry_line_that_disagrees_with_its_module_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(methods.METHODS, "loss", methods.Entry("detector", "recall",
                                                               "recitation.detect.whitebox:METHODS"))
    with pytest.raises(ConfigError, match="registered as detector 'recall'"):
        methods.method("loss")
    monkeypatch.setitem(methods.METHODS, "loss", methods.Entry(
        "detector", "whitebox", "recitation.detect.whitebox:NOTHING"))
    with pytest.raises(ConfigError, match="has no 'NOTHING'"):
        methods.method("loss")


def _paper_refs(paper: str) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """(file, sections) of each clause naming a paper file; the other citations."""
    files, cites = [], []
    for clause in paper.split(";"):
        if m := re.search(r"([\w.-]+\.md)", clause):
            files.append((m.group(1), re.findall(r"§([A-Z0-9]+(?:\.[0-9]+)*)", clause)))
        cites += re.findall(r"[A-Z][\w-]+ (?:et al\.|and [A-Z][\w-]+) (?:19|20)\d\d", clause)
    return files, cites


@pytest.mark.parametrize("name", ALL)
def test_names_its_paper_and_section(name: str) -> None:
    info = methods.method(name)
    files, cites = _paper_refs(info.paper)
    assert files or cites, f"{name}: '{info.paper}' cites no paper file nor 'X et al. YEAR'"
    if files and not PAPERS.is_dir():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"papers not found at {PAPERS}")
        pytest.skip(f"papers not found at {PAPERS}")
    for file, sections in files:
        assert sections, f"{name}: '{file}' is cited without a section"
        heads = [ln.lstrip("#").strip().strip("*").strip()
                 for ln in (PAPERS / file).read_text(encoding="utf-8").splitlines()
                 if ln.startswith("#")]
        for sec in sections:
            assert any(re.match(rf"{re.escape(sec)}[.\s]", h) for h in heads), \
                f"{name}: {file} has no section {sec}"


def test_the_paper_check_can_fail() -> None:
    assert _paper_refs("recap.md §3.2, §H; Shi et al. 2024 (x)") == (
        [("recap.md", ["3.2", "H"])], ["Shi et al. 2024"])
    assert _paper_refs("the authors' code") == ([], [])


@pytest.mark.parametrize("name", ALL)
def test_access_is_known_and_metadata_is_complete(name: str) -> None:
    info = methods.method(name)
    assert info.access and all(isinstance(a, Access) for a in info.access)
    assert info.family == methods.family_of(name) and info.writes
    d = info.to_dict()
    assert set(d["access"]) <= {a.value for a in Access} and d["paper"] == info.paper
    calls = info.calls(methods.params_dict(make_job(info.job, {}, 0).params)
                       if info.job != "extract" else {})
    assert isinstance(calls, Calls) and (calls.total >= 1 or info.kind == "tracer")
    assert (calls.generate > 0) == (Access.GENERATE in info.access)
    assert bool(calls.score) == (Access.LOGPROBS in info.access)


def test_access_must_be_access_values() -> None:
    base = methods.method("loss")
    with pytest.raises(ValueError, match="access"):
        replace(base, access=frozenset({"logprobs"}))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="kind"):
        replace(base, kind="attack")  # type: ignore[arg-type]


# -- every method through its job ------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_runs_through_its_job_and_writes_the_shared_schema(name: str, tmp_path: Path) -> None:
    info = methods.method(name)
    model = WhiteBoxModel(target_reply if info.job == "extract" else echo_responder)
    job, records = run_method(name, tmp_path, model)
    assert records
    if info.job == "detect":
        scores = [s for r in records for s in r["scores"]]
        for s in scores:
            assert set(s) == {"sample_id", "detector", "score", "higher_means_member"}
        assert not [e for r in records for e in r["errors"]]
        for field in info.writes:
            assert any(s["detector"] == field for s in scores) or any(
                r.get(field) for r in records), f"{name}: nothing written as '{field}'"
        family = methods.family_methods("detector", info.family)  # the job runs the family
        per_sample = methods.estimate(family, job.params).score
        expected = len(per_sample) * len(records) - (1 if name == "recall" else 0)
        if name == "camia":  # the population's texts and repeated texts, once, on its own
            pop = sum(1 for r in records if r.get("camia_population"))
            expected += -pop + 2 * pop  # no repeated text in the shared call; 2 of its own
        if name == "neighbourhood":  # at most n neighbours: fewer for a text with fewer
            assert len(job_scored(model)) == sum(1 + r["neighbours"] for r in records)
            assert len(job_scored(model)) <= expected
        else:
            assert len(job_scored(model)) == expected  # the estimate is what the job scores
    else:
        for field in info.writes:
            assert all(_path(r, field) not in (None, "", {}) for r in records), \
                f"{name}: '{field}' missing in {records[0].keys()}"
        if info.job == "extract":
            assert all(r["cost"] for r in records) and job.skipped_methods() == {}


def test_the_extraction_ladder_is_exercised() -> None:
    """The scripted target refuses DSP, so the jailbreak and the feedback round run."""
    assert target_reply(GenerationRequest.chat("x", system=prompts.EXTRACTION_SYSTEM)) \
        .startswith("I cannot")


# what a contract test takes away from a method, and what the refusal must then say
_TAKE = [(Access.TOKENIZER, "tokenizer"), (Access.LOGPROBS, "log-probabilities"),
         (Access.EMBEDDINGS, "recitation[embed]"), (Access.GENERATE, "generat"),
         (Access.CORPUS_INDEX, "corpus_index")]


def _refusal(name: str, tmp_path: Path, take: Access,
             monkeypatch: pytest.MonkeyPatch) -> str:
    """What the job says when ``take`` is missing (exception or recorded error / skip)."""
    info = methods.method(name)
    if take is Access.CORPUS_INDEX:  # a tracer run without an index
        try:
            trace_method(tmp_path, ScriptedModel(), index=False)
        except ConfigError as e:
            return str(e)
        raise AssertionError(f"{name} ran without a corpus index")
    model: Model = {Access.TOKENIZER: ScriptedModel(), Access.LOGPROBS: BlackBox(),
                    Access.GENERATE: NoGeneration(),
                    Access.EMBEDDINGS: WhiteBoxModel(target_reply)}[take]
    if take is Access.EMBEDDINGS:
        real = importlib.util.find_spec
        monkeypatch.setattr(importlib.util, "find_spec", lambda mod, *a, **k: None if mod ==
                            "sentence_transformers" else real(mod, *a, **k))
    try:
        job, records = run_method(name, tmp_path, model)
    except ConfigError as e:
        return str(e)
    if info.job == "extract":
        assert take is Access.EMBEDDINGS
        return json.dumps(job.skipped_methods())
    family_errors = [e for r in records for e in r["errors"] if e.startswith(info.family)]
    assert len(family_errors) == len(records), "every sample says why it has no score"
    assert not [s for r in records for s in r["scores"]]
    return family_errors[0]


@pytest.mark.parametrize("name", ALL)
def test_refuses_clearly_when_its_access_is_missing(name: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    info = methods.method(name)
    take, says = next((a, s) for a, s in _TAKE if a in info.access)
    message = _refusal(name, tmp_path, take, monkeypatch)
    assert says in message and (name in message or info.family in message), message


def test_black_box_backend_is_refused_before_any_score_call(tmp_path: Path) -> None:
    job = make_job("detect", detect_params(methods.method("recall"), tmp_path) |
                   {"detectors": ["whitebox", "recall", "dcpdd"]}, 0)
    model = BlackBox()
    records = run(job, model)
    assert model.scored == []
    assert records[0]["errors"] == [
        f"{f}: {f} needs logprobs: {methods.ACCESS_DESCRIPTIONS[Access.LOGPROBS]}; backend "
        "'scripted' does not offer it" for f in ("whitebox", "recall")] + [
        "dcpdd: dcpdd needs logprobs: " + methods.ACCESS_DESCRIPTIONS[Access.LOGPROBS]
        + "; tokenizer: " + methods.ACCESS_DESCRIPTIONS[Access.TOKENIZER]
        + "; backend 'scripted' does not offer it"]


def test_min_k_pp_says_when_the_backend_gives_no_distribution(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    job = make_job("detect", detect_params(methods.method("min_k_pp"), tmp_path), 0)
    records = run(job, ScriptedModel())  # log-probabilities, no vocabulary mean / std
    assert not any(s["detector"].startswith("min_k_pp") for r in records for s in r["scores"])
    assert "min_k_pp and gap_k are not computed: they need full_distribution" in caplog.text


# -- a new detector family: one module, one registry line -------------------------------------


class ToyDetector:
    """Scores the upper-cased text in the job's shared call (a companion text)."""

    family = "toy"

    def companion_texts(self, ctx: ScoringContext, samples: Sequence[Sample]) -> list[str]:
        return [s.text.upper() for s in samples]

    async def score(self, ctx: ScoringContext, samples: Sequence[Sample],
                    plain: Sequence[TokenScores], companions: Sequence[TokenScores],
                    model: Model) -> dict[str, SampleResult]:
        return {s.id: SampleResult([DetectorScore(s.id, "toy", sum(c.logprobs) - sum(p.logprobs),
                                                  True)], fields={"toy_seen": len(samples)})
                for s, p, c in zip(samples, plain, companions, strict=True)}


TOY = MethodInfo(name="toy", kind="detector", title="toy", paper="Nobody et al. 2099",
                 access=frozenset({Access.LOGPROBS}), writes=("toy", "toy_seen"),
                 calls=lambda p: Calls(score=frozenset({"text", "TEXT"})),
                 calls_formula="2 scores", job="detect", family="toy", summary="a toy",
                 runner=f"{__name__}:ToyDetector")


def test_a_new_detector_family_is_one_module_and_one_registry_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(methods.METHODS, "toy", methods.Entry("detector", "toy",
                                                              f"{__name__}:TOY"))
    job = make_job("detect", detect_params(TOY, tmp_path) | {"detectors": ["toy"]},
                   0)
    model = WhiteBoxModel()
    records = run(job, model)
    assert len(job_scored(model)) == 2 * len(records)  # one shared call: texts + companions
    assert job_scored(model)[len(records)] == MEMBERS[0].upper()
    assert [[s["detector"] for s in r["scores"]] for r in records] == [["toy"]] * len(records)
    assert all(r["toy_seen"] == len(records) for r in records)


# -- what derives from the registry -----------------------------------------------------------


def test_choices_and_literals_equal_the_registry() -> None:
    from recitation.cli import build_parser
    from recitation.detect.job import DETECTORS
    from recitation.extract.cli import _METHODS
    from recitation.extract.job import Method

    recap = tuple(n for n in methods.names("extraction") if methods.method(n).job == "extract")
    assert typing.get_args(Method) == recap
    assert _METHODS == tuple(methods.names("extraction"))  # RECAP's and the whole-book one
    from recitation.detect.job import DEFAULT_DETECTORS

    assert DETECTORS == tuple(methods.families("detector"))
    assert set(DEFAULT_DETECTORS) <= set(DETECTORS) and len(set(DETECTORS)) == len(DETECTORS)
    detect = next(a for a in build_parser()._subparsers._group_actions[0]  # type: ignore[union-attr]
                  .choices["detect"]._actions if a.dest == "detectors")
    assert list(detect.choices or ()) == list(DETECTORS)


def test_estimates_combine_shared_calls() -> None:
    wb = methods.family_methods("detector", "whitebox")
    est = methods.estimate([*wb, methods.method("recall")], {"reference_model": None})
    assert est.score == {"text", "text.lower()", "prefix + text"} and est.reference == 0
    assert methods.estimate(wb, {"reference_model": {"backend": "x"}}).reference == 1
    recap = methods.method("recap").calls({"recap": {"jailbreaks": ["static", "past_tense"],
                                                     "max_rounds": 3}})
    assert (recap.generate, recap.judge, recap.helper) == (6, 3, 3)


def test_methods_json_lists_every_method(capsys: pytest.CaptureFixture[str]) -> None:
    from recitation.cli import main

    assert main(["methods", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [m["name"] for m in listed] == ALL
    assert all(m["paper"] and m["access"] and m["writes"] for m in listed)
    assert main(["methods", "--json", "--kind", "extraction"]) == 0
    assert [m["name"] for m in json.loads(capsys.readouterr().out)] == methods.names(
        "extraction")
    assert main(["methods"]) == 0
    assert "pearl_bitflip" in capsys.readouterr().out


def test_docs_method_table_is_the_registry() -> None:
    from recitation.methods_cli import BEGIN as begin
    from recitation.methods_cli import END as end

    text = (REPO / "docs" / "methods.md").read_text(encoding="utf-8")
    assert begin in text and end in text, "docs/methods.md lost its table markers"
    table = text.split(begin, 1)[1].split(end, 1)[0]
    assert table == methods.markdown_table(plugins=False), (
        "docs/methods.md is out of date: rewrite the table with "
        "`recitation methods --write-docs docs/methods.md`")


def test_write_docs_rewrites_only_the_table(tmp_path: Path) -> None:
    from recitation.cli import main
    from recitation.methods_cli import BEGIN, END

    doc = tmp_path / "m.md"
    doc.write_text(f"intro\n{BEGIN}stale\n{END}\noutro\n", encoding="utf-8")
    assert main(["methods", "--write-docs", str(doc)]) == 0
    table = methods.markdown_table(plugins=False)
    assert doc.read_text(encoding="utf-8") == f"intro\n{BEGIN}{table}{END}\noutro\n"
    doc.write_text("no markers", encoding="utf-8")
    assert main(["methods", "--write-docs", str(doc)]) == 1  # a clear error, not a rewrite
    assert doc.read_text(encoding="utf-8") == "no markers"
