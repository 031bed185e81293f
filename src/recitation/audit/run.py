"""``recitation audit``: the methods that fit each model's access, on the text and on the
controls, as ordinary resumable runs under one audit folder.

An audit folder (``runs/audit-<time>-<hex>/``) holds

* ``inputs/text.jsonl``, ``inputs/controls.jsonl``, ``inputs/passages.jsonl`` — the
  passages every run reads (group ``text`` / ``control``);
* ``runs/<run>/run.sqlite`` — one run per model and method family (prefix probing on text and
  controls together; detect with the text as members and the controls as controls; trace of
  the prefix-probing continuations when an index is given);
* ``audit.json`` — the manifest: settings, inputs and their hashes, why the controls fit,
  and for each model the methods chosen from the registry (:mod:`recitation.methods`) by
  the model's access, the methods left out and why, and its runs.

``recitation report AUDIT`` reads only this folder. A killed audit is finished with
``recitation audit --resume AUDIT``: every run resumes from its store.
"""

from __future__ import annotations

import asyncio
import json
import math
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from recitation import methods
from recitation.audit.continue_run import create_continue_run
from recitation.audit.inputs import (
    Controls as ControlSet,
)
from recitation.audit.inputs import (
    Passage,
    builtin_controls,
    given_controls_reason,
    load_passages,
    pick,
    spec_hashes,
    write_jsonl,
)
from recitation.audit.notices import (
    controls_notice,
    cut_notice,
    jsonl_lengths,
    kept_notices,
    recap_notice,
)
from recitation.audit.recap import create_recap_runs
from recitation.audit.sampling import select_passages
from recitation.errors import ConfigError
from recitation.extract.null import DEFAULT_NULL_MODEL
from recitation.method_options import check_options
from recitation.methods import Access
from recitation.metrics.fdr import DEFAULT_Q
from recitation.metrics.null import DEFAULT_ALPHA
from recitation.metrics.verbatim import VERBATIM_WORDS
from recitation.models import registry
from recitation.models.config import parse_model_spec
from recitation.models.registry import capabilities_of
from recitation.models.rendezvous import run_together
from recitation.runs.audits import MANIFEST_FORMAT, RECAP_RUNS, load_manifest, save_manifest
from recitation.runs.config import ResolvedPath, TokenizerPath, parse_config
from recitation.runs.runner import RunOutcome, create_run, default_runs_dir, execute
from recitation.verdict.pins import pins_now

FORMAT = MANIFEST_FORMAT

Say = Callable[[str], None]


class AuditSettings(BaseModel):
    """Sizes and settings of an audit (defaults: a cheap audit on a CPU)."""

    model_config = ConfigDict(extra="forbid")

    passages: int = Field(12, ge=0, description="text passages audited (0: all); with "
                          "several works (a catalogue), of each work")
    sample: Literal["chapters", "even"] = Field(
        "chapters", description="a book's passages: chapters, drawn at random by chapter "
        "(a whole-book estimate with its interval); even: evenly spaced (earlier audits)")
    controls: int = Field(12, ge=0, description="control passages (0: all)")
    passage_words: int = Field(100, ge=8)
    prefix_fraction: float = Field(0.5, gt=0, lt=1)
    max_new_tokens: int | None = Field(None, ge=1, description="2 tokens per "
                                       "target word + 8")
    recap_passages: int = Field(4, ge=0, description="text passages, and as many control "
                                "passages, also run through RECAP's feedback loop (0: none)")
    recap_rounds: int = Field(5, ge=0, description="RECAP feedback rounds at most (released: 5)")
    recap_hint_tokens: int = Field(512, ge=8, description="reply limit of the feedback helper "
                                   "(the extract job: 4096; released: none)")
    pearl: bool = True
    whole_book: bool = Field(False, description="also extract the whole book by continuation "
                             "(extract --methods continue: its share of the book)")
    whole_book_calls: int = Field(40, ge=1, description="whole book: calls per model at most")
    whole_book_tokens: int = Field(256, ge=8, description="whole book: reply limit per call")
    pearl_perturbations: list[str] = Field(default_factory=lambda: ["bitflip"])
    pearl_max_intensity: int = Field(3, ge=1)
    pearl_outputs: int = Field(1, ge=1)
    target_fpr: float = Field(0.1, gt=0, lt=1)
    fdr_q: float = Field(DEFAULT_Q, gt=0, lt=1, description="several works: the false "
                         "discovery rate of the catalogue's verdicts (Benjamini-Hochberg)")
    n_bootstrap: int = Field(200, ge=0)
    min_tokens: int = Field(40, ge=1, description="RECAP's verbatim passages: their length "
                            "in tokens (RECAP: 40)")
    verbatim_words: int = Field(VERBATIM_WORDS, ge=1, description="reproduced verbatim: at "
                                "least this many consecutive words of a passage, exactly "
                                "(metrics/verbatim.py)")
    corpus: list[str] = Field(default_factory=list, description="infini-gram index folders")
    batch_size: int | None = Field(None, ge=1, description="requests per call: a model run "
                                   "here 32 (decoding in larger batches is faster on a CPU), "
                                   "an API 8")
    null_model: str | None = Field(DEFAULT_NULL_MODEL, description="without controls: the "
                                   "reference model whose probability of each verbatim span "
                                   "decides reproduction beyond chance (None: no null)")
    null_alpha: float = Field(DEFAULT_ALPHA, gt=0, lt=1, description="the null's family-wise "
                              "level over the text passages (Bonferroni)")
    seed: int = 0
    timeout: float | None = Field(None, gt=0, description="an API model: 60 s plus 1 s per "
                                  "20 tokens of the longest reply the audit asks for")
    concurrency: int | None = Field(None, ge=1, description="an API model: 4")
    cache: bool = True
    trust_logprobs: bool = Field(False, description="the detectors use a model's "
                                 "log-probabilities even when their integrity check fails")
    signals: ResolvedPath | None = Field(None, description="none: scored through the model")
    tokenizer: TokenizerPath | None = Field(None, description="none: DC-PDD only where the "
                                           "backend has its own tokenizer")
    detector_options: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="a detector family's own options (family -> "
        "{key: value}: --detector-option FAMILY.key=value), for the detect runs it is in")

    @field_validator("detector_options")
    @classmethod
    def _family_options(cls, v: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        try:
            return check_options("detector", v)
        except ConfigError as e:
            raise ValueError(str(e)) from None

    @field_validator("null_model")
    @classmethod
    def _no_null(cls, v: str | None) -> str | None:
        return None if v is None or v.strip().lower() in ("", "none") else v


LOCAL_BATCH = 32
"""Requests per call to a model that batches on this machine: 30 greedy continuations of
100-word passages took 48 s in batches of 8 and 22 s in batches of 32 on 2 cores (the
same texts; docs/benchmarks.md)."""


def model_for_runs(spec: str, s: AuditSettings) -> dict[str, Any]:
    """The model config of every run of ``spec``: its spec and the batch size; for an API
    model, the request timeout (:func:`request_timeout`) and the concurrency when set."""
    model = parse_model_spec(spec)
    caps = capabilities_of(model["backend"])
    model |= {"batch_size": s.batch_size or (LOCAL_BATCH if caps.local and caps.batching
                                             else 8)}
    if caps.local:
        return model
    if s.concurrency:
        model["concurrency"] = s.concurrency
    return model | {"timeout": request_timeout(s)}


def request_timeout(s: AuditSettings) -> float:
    """Seconds an API model's request may take: ``timeout``, else the extract command's rule
    (60 s plus 1 s per 20 tokens) for the longest reply the audit asks for: prefix probing's
    continuation, RECAP's attempt and its feedback hint."""
    from recitation.extract.agents import request_timeout as scaled

    if s.timeout:
        return s.timeout
    longest = s.max_new_tokens or 2 * s.passage_words + 8  # RECAP's cap (audit/recap.py)
    return scaled(max(longest, s.recap_hint_tokens) if s.recap_passages else longest)


def plan_methods(spec: str, settings: AuditSettings, n_controls: int | None = None
                 ) -> tuple[list[str], dict[str, str]]:
    """The method families an audit runs on this model: every family whose methods declare
    an :class:`~recitation.methods.AuditUse` (the registry), in their order, that fits the
    model's access, the settings and the ``n_controls`` controls; and the ones left out,
    each with the reason."""
    have = methods.model_access(capabilities_of(parse_model_spec(spec)["backend"]))
    if settings.corpus:
        have.add(Access.CORPUS_INDEX)
    if settings.tokenizer:  # the served model's, named by the user (checked when scoring)
        have.add(Access.TOKENIZER)
    if Access.GENERATE in have:  # the audit's RECAP uses the model as its own helper and judge
        have |= {Access.HELPER_MODEL, Access.JUDGE_MODEL}
    chosen: list[str] = []
    skipped: dict[str, str] = {}
    for fam in methods.audit_families():
        if reason := _left_out(fam, have, settings, n_controls):
            skipped[fam.family] = reason
            continue
        chosen.append(fam.family)
        for m in fam.methods:  # a method its family runs without (Min-K%++, Gap-K% over an API)
            if missing := methods.missing_access(m, have):
                skipped[m.name] = (f"{_lacks([a.value for a in missing])} ({fam.family} runs "
                                   "without it)")
    return chosen, skipped


_FIXES = {Access.TOKENIZER.value: "name the model's tokenizer with --tokenizer PATH",
          Access.FULL_DISTRIBUTION.value: "no API gives it (vLLM only as the whole vocabulary "
          "at every position); load the same weights with the local backend"}
"""How a user gives an audit the access a method lacks, where there is a way."""


def _lacks(missing: list[str]) -> str:
    fixes = "".join(f"; {_FIXES[a]}" for a in missing if a in _FIXES)
    return f"needs {', '.join(missing)}, which this model / audit lacks{fixes}"


def _left_out(fam: methods.AuditFamily, have: set[Access], s: AuditSettings,
              n_controls: int | None) -> str:
    """Why the audit leaves this family out ("" when it runs it)."""
    use = fam.use
    if use.off and use.off not in AuditSettings.model_fields:
        raise ConfigError(f"method registry: family '{fam.family}' is turned off by "
                          f"'{use.off}', which is no audit setting")
    if use.off and not getattr(s, use.off):
        return f"turned off ({use.off_flag or use.off})"
    if all(methods.missing_access(m, have) for m in fam.methods):
        missing = sorted({a.value for m in fam.methods for a in methods.missing_access(m, have)})
        return _lacks(missing)
    if n_controls is not None and n_controls < use.min_controls:
        return f"needs at least {use.min_controls} controls; this audit has {n_controls}"
    return ""


def runs_of(kind: str, chosen: list[str]) -> list[str]:
    """The chosen families that go in the audit's ``kind`` run (e.g. every detector family
    in the one detect run), in the registry's order."""
    by_family = {f.family: f.use.run for f in methods.audit_families()}
    return [f for f in chosen if by_family.get(f) == kind]


def null_model_for(spec: str, s: AuditSettings, has_controls: bool) -> str | None:
    """The reference model of the reproduction null (extract/null.py): for an audit without
    controls, the settings' ``null_model`` unless it is the audited model itself."""
    if has_controls or not s.null_model:
        return None
    return None if parse_model_spec(s.null_model) == parse_model_spec(spec) else s.null_model


def _prefix_cfg(spec: str, s: AuditSettings, passages: Path, mode: str,
                null: str | None = None) -> Any:
    target_words = math.ceil(s.passage_words * (1 - s.prefix_fraction))
    params = {"source": "jsonl", "path": str(passages), "max_words": s.passage_words,
              "prefix_fraction": s.prefix_fraction, "keep_spacing": True, "mode": mode,
              "max_new_tokens": s.max_new_tokens or 2 * target_words + 8,
              "null_model": parse_model_spec(null) if null else None,
              "verbatim_words": s.verbatim_words}
    model = model_for_runs(spec, s)
    return parse_config({"job": "prefix_probe", "name": "audit-prefix", "seed": s.seed,
                         "model": model, "cache": s.cache, "params": params}, source="audit")


def _detect_cfg(spec: str, s: AuditSettings, families: list[str], text: Path,
                controls: Path) -> Any:
    params = {"members": [str(text)], "controls": [str(controls)],
              "detectors": families,
              "perturbations": s.pearl_perturbations, "max_intensity": s.pearl_max_intensity,
              "outputs": s.pearl_outputs, "target_fpr": s.target_fpr,
              "n_bootstrap": s.n_bootstrap, "passage_words": s.passage_words,
              "signals": s.signals, "tokenizer": s.tokenizer,
              "trust_logprobs": s.trust_logprobs,
              "detector_options": {f: o for f, o in s.detector_options.items()
                                   if f in families}}
    model = model_for_runs(spec, s)
    return parse_config({"job": "detect", "name": "audit-detect", "seed": s.seed,
                         "model": model, "cache": s.cache, "params": params}, source="audit")


def _mode(spec: str) -> str:
    caps = capabilities_of(parse_model_spec(spec)["backend"])
    return "completion" if caps.completion else "chat"


def _load(group: str, specs: list[str], s: AuditSettings, notes: list[str]) -> list[Passage]:
    """The passages of ``specs``; how each was cut, noted (audit/notices.py)."""
    out: list[Passage] = []
    for spec in specs:
        ps = load_passages(spec, s.passage_words)
        if note := cut_notice(group, spec, ps, s.passage_words, jsonl_lengths(spec)):
            notes.append(note)
        out += ps
    return out


def _controls(s: AuditSettings, text: list[str], controls: list[str],
              notes: list[str]) -> ControlSet:
    if controls:
        ps = _load("controls", controls, s, notes)
        found = ControlSet(ps, list(controls), False, given_controls_reason(controls))
    else:
        found = builtin_controls(text, s.passage_words)
    kept = pick(found.passages, s.controls)
    if note := controls_notice(len(found.passages), len(kept)):
        notes.append(note)
    return ControlSet(kept, found.spec, found.builtin, found.reason)


def _text_passages(text: list[str], s: AuditSettings, notes: list[str]
                   ) -> tuple[list[Passage], dict[str, Any] | None]:
    """The audited passages (``passages`` of each work) and, for books drawn by chapter,
    the sampling design's record (audit/sampling.py)."""
    every = _load("text", text, s, notes)
    chapters = s.sample == "chapters"
    kept, design = select_passages(every, s.passages, by_chapter=chapters, seed=s.seed)
    notes += kept_notices(every, kept, by_chapter=chapters, seed=s.seed)
    return kept, design


def create_audit(text: list[str], models: list[str], controls: list[str],
                 settings: AuditSettings, *, runs_dir: Path | None = None,
                 redact: bool = False, name: str = "audit") -> Path:
    """The audit folder with its inputs and one created (not yet executed) run per model
    and method family; every input and model is checked before anything is written."""
    with registry.shared_backends():  # each model built once: checked here, then its runs
        return _create_audit(text, models, controls, settings, runs_dir, redact, name)


def _create_audit(text: list[str], models: list[str], controls: list[str],
                  settings: AuditSettings, runs_dir: Path | None, redact: bool,
                  name: str) -> Path:
    if not text or not models:
        raise ConfigError("audit: give at least one --text and one --model")
    notes: list[str] = []
    passages, sampling = _text_passages(text, settings, notes)
    ctl = _controls(settings, text, controls, notes)
    for m in models:  # a bad spec or an unbuilt organism: refused before anything is written
        registry.backend_for(m)
    plans = {m: plan_methods(m, settings, len(ctl.passages)) for m in models}
    if any("recap" in chosen for chosen, _ in plans.values()):
        notes += recap_notice(settings.recap_passages, len(passages), len(ctl.passages))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    folder = (runs_dir or default_runs_dir()) / f"{name}-{stamp}-{secrets.token_hex(3)}"
    inputs = folder / "inputs"
    files = {"text": write_jsonl(inputs / "text.jsonl", passages, "text"),
             "controls": write_jsonl(inputs / "controls.jsonl", ctl.passages, "control")}
    both = inputs / "passages.jsonl"
    files["passages"] = write_jsonl(both, passages, "text")
    with both.open("a", encoding="utf-8") as fh:
        for p in ctl.passages:
            fh.write(json.dumps({"id": p.id, "text": p.text, "group": "control",
                                 "source": p.source}, ensure_ascii=False) + "\n")
    files["passages"] = {"path": both.name, "passages": len(passages) + len(ctl.passages)}
    entries = []
    for spec in models:
        chosen, skipped = plans[spec]
        entries.append({"spec": spec, "methods": chosen, "skipped": skipped, "runs": {}})
    manifest = {
        "format": FORMAT, "audit_id": folder.name, "created": time.time(),
        "text": text, "controls": {"specs": ctl.spec, "builtin": ctl.builtin,
                                   "reason": ctl.reason, "n": len(ctl.passages)},
        "settings": settings.model_dump(mode="json"), "redact": redact, "inputs": files,
        "input_hashes": spec_hashes(list(text) + list(controls)), "models": entries,
        "notices": notes, "verdict": pins_now(settings.verbatim_words).model_dump(mode="json")}
    if sampling is not None:
        manifest["sampling"] = sampling
    save_manifest(folder, manifest)
    _create_runs(folder, manifest, settings)
    return folder


def _create_runs(folder: Path, manifest: dict[str, Any], s: AuditSettings) -> None:
    inputs, runs = folder / "inputs", folder / "runs"
    has_controls = manifest["controls"]["n"] > 0
    for entry in manifest["models"]:
        spec, chosen = entry["spec"], entry["methods"]
        if runs_of("prefix_probe", chosen):
            cfg = _prefix_cfg(spec, s, inputs / "passages.jsonl", _mode(spec),
                              null_model_for(spec, s, has_controls))
            entry["runs"]["prefix_probe"] = create_run(cfg, runs).name
        if runs_of("continue", chosen):
            create_continue_run(manifest["text"], runs, model_for_runs(spec, s), s, entry,
                                _mode(spec))
        if runs_of("recap", chosen):
            create_recap_runs(inputs, runs, model_for_runs(spec, s), s, entry, has_controls)
        detectors = runs_of("detect", chosen)
        if detectors and has_controls:
            cfg = _detect_cfg(spec, s, detectors, inputs / "text.jsonl",
                              inputs / "controls.jsonl")
            entry["runs"]["detect"] = create_run(cfg, runs).name
        elif detectors:
            entry["skipped"]["detect"] = "no controls: detectors cannot be calibrated"
        save_manifest(folder, manifest)


def execute_audit(folder: Path, say: Say = print, *,
                  call_settings: dict[str, Any] | None = None) -> list[RunOutcome]:
    """Run (or resume) every run of the audit; trace runs are added once the prefix-probing
    continuations they trace exist. ``call_settings`` (``timeout``, ``concurrency``: a
    resumed audit's ``--timeout``, ``--concurrency``) apply to its API models' runs."""
    with registry.shared_backends():  # one backend per model for all its runs
        return _execute_audit(folder, say, call_settings or {})


def _execute_audit(folder: Path, say: Say, calls: dict[str, Any]) -> list[RunOutcome]:
    manifest = load_manifest(folder)
    outcomes = []
    for entry in manifest["models"]:
        local = capabilities_of(parse_model_spec(entry["spec"])["backend"]).local
        for methods_ in run_stages(entry):
            names = [entry["runs"][m] for m in methods_]
            say(f"{entry['spec']}: {', '.join(methods_)} ...")
            t0 = time.perf_counter()
            outs = asyncio.run(_execute_together([folder / "runs" / n for n in names],
                                                 None if local else calls))
            for method, out in zip(methods_, outs, strict=True):
                st = out.stats
                say(f"{entry['spec']}: {method} {out.status} ({out.done_items}/"
                    f"{out.total_items} items, {time.perf_counter() - t0:.1f} s; backend "
                    f"calls {st.backend_calls}, from cache {st.served_from_cache}, from run "
                    f"store {st.served_from_store})")
            outcomes += outs
        if runs_of("trace", entry["methods"]) and entry["runs"].get("prefix_probe"):
            settings = AuditSettings.model_validate(manifest["settings"])
            outcomes.append(_trace(folder, manifest, entry, settings, say))
    return outcomes


def run_stages(entry: dict[str, Any]) -> list[list[str]]:
    """The model's runs in order, as stages run one after another: prefix probing, the whole
    book by continuation, RECAP, detection. A model that batches on this machine runs its
    two RECAP runs (passages and controls) in one stage, their prompts decoded together
    (:mod:`recitation.models.rendezvous`); an API model runs them one after the other,
    within its rate limits."""
    have = [m for m in ("prefix_probe", "continue", *RECAP_RUNS.values(), "detect")
            if entry["runs"].get(m)]
    caps = capabilities_of(parse_model_spec(entry["spec"])["backend"])
    recap = [m for m in have if m in RECAP_RUNS.values()]
    together = caps.local and caps.batching and len(recap) > 1
    stages: list[list[str]] = []
    for m in have:
        if together and m in recap:
            if m == recap[0]:
                stages.append(recap)
        else:
            stages.append([m])
    return stages


async def _execute_together(run_dirs: list[Path], calls: dict[str, Any] | None = None
                            ) -> list[RunOutcome]:
    if len(run_dirs) == 1:
        return [await execute(run_dirs[0], call_settings=calls)]
    outs, _ = await run_together([execute(d, call_settings=calls) for d in run_dirs])
    return outs


def _trace(folder: Path, manifest: dict[str, Any], entry: dict[str, Any],
           s: AuditSettings, say: Say) -> RunOutcome:
    from recitation.trace.cli import export_run

    runs = folder / "runs"
    if not (name := entry["runs"].get("trace")):
        gens = export_run(entry["runs"]["prefix_probe"], runs, "continuation", "group")
        cfg = parse_config({"job": "trace", "name": "audit-trace", "seed": s.seed,
                            "model": parse_model_spec(entry["spec"]),
                            "params": {"index": s.corpus, "generations": str(gens)}},
                           source="audit")
        name = entry["runs"]["trace"] = create_run(cfg, runs).name
        save_manifest(folder, manifest)
    say(f"{entry['spec']}: trace ...")
    return asyncio.run(execute(runs / name))
