"""``recitation extract``: RECAP and its baselines on one book, written as an EchoTrace
extraction file that ``recitation evaluate`` scores.

    recitation extract --book BOOK.json --target smollm2 [--helper SPEC] [--judge SPEC]
        [--methods prefix,dsp,dsp_jailbreak,recap,recap_filter] [--budget-tokens N]
        [--chapters 1,2] [--events-per-chapter N] [--max-events N] [--out DIR_OR_FILE]
    recitation extract --export RUN [--out ...]     # (re)write the file of a run

Model specs (``--target``, ``--helper``, ``--judge``): ``backend:model[@url]``, parsed by
:func:`recitation.models.config.parse_model_spec`; a bare name or path (``smollm2``,
``./model``) is a local model. A killed extraction continues with
``recitation resume RUN`` followed by ``recitation extract --export RUN``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from recitation.errors import ConfigError
from recitation.methods import check_family, names
from recitation.models.config import add_device_option, parse_model_spec

__all__ = ["add_extract_parser", "build_params", "export_run", "parse_model_spec",
           "request_timeout_for"]

_METHODS = tuple(names("extraction"))  # from the method registry (recitation.methods)
WHOLE_BOOK = "continue"  # its own job (extract/continue_book.py), never combined with RECAP's
_RECAP = tuple(m for m in _METHODS if m != WHOLE_BOOK)


def _ints(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--chapters: expected comma-separated integers, got '{text}'") from None


def build_params(args: argparse.Namespace) -> dict[str, Any]:
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    for m in methods:
        check_family("extraction", m, "--methods")
    params: dict[str, Any] = {"book": str(args.book), "methods": methods,
                              "chapters": _ints(args.chapters), "segment": args.segment}
    for name in ("events_per_chapter", "max_events", "max_event_words"):
        if getattr(args, name) is not None:
            params[name] = getattr(args, name)
    if args.helper:
        params["helper"] = parse_model_spec(args.helper, args.helper_key_env)
    if args.judge:
        params["judge"] = parse_model_spec(args.judge, args.helper_key_env)
    recap: dict[str, Any] = {"max_rounds": args.rounds}
    for name in ("max_new_tokens", "feedback_max_tokens"):  # unset: the released allowance
        if getattr(args, name, None) is not None:
            recap[name] = getattr(args, name)
    if args.block_leaks:
        recap["leak"] = {"block": True}
    if args.domain:
        recap["domain"] = args.domain
    for name in ("verifier", "refusal_keywords", "prefix_prompt"):
        if getattr(args, name, None):
            recap[name] = getattr(args, name)
    if getattr(args, "jailbreaks", None):
        recap["jailbreaks"] = [j.strip() for j in args.jailbreaks.split(",") if j.strip()]
    params["recap"] = recap
    summary = {k: v for k, v in (("max_tokens", getattr(args, "summary_max_tokens", None)),
                                 ("temperature", getattr(args, "summary_temperature", None)),
                                 ("prompt", getattr(args, "summary_prompt", None)))
               if v is not None}
    if summary:
        params["summary"] = summary
    params["filter"] = {"time_budget_s": args.filter_budget, "threshold": args.filter_threshold}
    return params


def cmd_extract(args: argparse.Namespace) -> int:
    from recitation.runs.config import parse_config
    from recitation.runs.console import console, execute_and_print
    from recitation.runs.runner import create_run, find_run

    if args.export:
        run_dir = find_run(args.export, args.runs_dir)
        out = export_run(run_dir, args.out)
        console.print("\n".join(f"wrote {p}" for p in out))
        return 0
    if not args.book or not args.target:
        raise ConfigError("recitation extract needs --book and --target (or --export RUN)")
    if WHOLE_BOOK in args.methods.split(","):
        from recitation.extract.continue_cli import cmd_continue

        return cmd_continue(args, _ints(args.chapters))
    _check_models_and_methods(args)
    timeout, params = request_timeout_for(args), build_params(args)
    for role in ("helper", "judge"):
        if role in params:
            params[role]["timeout"] = timeout
    cfg = parse_config({
        "job": "extract", "name": "extract", "seed": 0,
        "model": parse_model_spec(args.target, args.target_key_env)
        | {k: v for k, v in (("concurrency", args.concurrency),
                             ("batch_size", args.batch_size)) if v} | {"timeout": timeout},
        "budget": {"max_tokens": args.budget_tokens}, "cache": not args.no_cache,
        "params": params}, source="recitation extract")
    run_dir = create_run(cfg, args.runs_dir)
    console.print(f"run directory: {run_dir}  (resume: recitation resume {run_dir})")
    code = execute_and_print(run_dir)
    for p in export_run(run_dir, args.out):
        console.print(f"wrote {p}")
    return code


def request_timeout_for(args: argparse.Namespace) -> float:
    """Seconds each model call may take: ``--timeout``, else scaled
    (:func:`~recitation.extract.agents.request_timeout`) with the longest reply the run may
    ask for: the longest event's attempt allowance, the feedback hint limit and, when
    chapters are segmented, the summary agent's limit."""
    if getattr(args, "timeout", None):
        return float(args.timeout)
    from recitation.extract.agents import RecapConfig, attempt_allowance, request_timeout
    from recitation.extract.job import load_book
    from recitation.extract.summary import SummaryConfig

    recap = RecapConfig(**build_params(args)["recap"])
    book = load_book(str(args.book))
    tokens = [recap.feedback_max_tokens] + [attempt_allowance(e.text, recap)
                                            for ch in book.chapters for e in ch.events]
    if args.segment or any(not ch.events for ch in book.chapters):
        tokens += [attempt_allowance(ch.full_text, recap) for ch in book.chapters]
        tokens.append(getattr(args, "summary_max_tokens", None) or SummaryConfig().max_tokens)
    return request_timeout(max(tokens))


def _check_models_and_methods(args: argparse.Namespace) -> None:
    """Before the run exists (so before any paid call): the helper and judge backends must
    build (SDK installed, key set), and every requested method's requirements are checked;
    a method that cannot run is announced and skipped, the others run."""
    from rich.markup import escape

    from recitation.extract.job import missing_requirements
    from recitation.models.config import ModelConfig
    from recitation.models.registry import build_backend
    from recitation.runs.console import err_console

    params = build_params(args)
    for role in ("helper", "judge"):
        if role in params:
            build_backend(ModelConfig.model_validate(params[role]))
    for reason in missing_requirements(params["methods"]).values():
        err_console.print(f"[yellow]skipped: {escape(reason)}; the other methods run[/yellow]")


def export_run(run_dir: Path, out: str | None) -> list[Path]:
    """Write the extraction file(s) of a run from its store alone (the book as stored when
    the run was created: the book file may have moved); returns their paths."""
    from recitation.extract.export import build_book, extraction_filename, write_extraction
    from recitation.extract.job import ExtractJob, skipped_in
    from recitation.runs.runner import load_job
    from recitation.runs.store import RunStore

    with RunStore(run_dir) as store:
        cfg, job = load_job(store)
        records = list(store.results("extract"))
    if not isinstance(job, ExtractJob):
        raise ConfigError(f"{run_dir}: a '{cfg.job}' run, not an extract run: nothing to "
                          "export")
    skipped = skipped_in(records)
    records = job.complete_records(records)  # failed events count 0, as released
    source = job.book()
    helper = job.params.helper.model if job.params.helper else cfg.model.model
    book = build_book(source, records)
    name = str(book.metadata["book_name"])
    target = Path(out or "extractions")
    if target.suffix == ".json":
        main, filtered = target, target.with_suffix(".filtered.json")
    else:
        main = target / extraction_filename(name, cfg.model.model, helper)
        filtered = target / extraction_filename(name, cfg.model.model + "-filter", helper)
    paths = [write_extraction(book, main, records)]
    if "recap_filter" in job.params.methods and "recap_filter" not in skipped:
        paths.append(write_extraction(build_book(source, records, filtered=True), filtered,
                                      records))
    return paths


def add_extract_parser(subparsers: Any) -> None:
    """Register ``recitation extract``."""
    p = subparsers.add_parser("extract", help="RECAP extraction and baselines on one book")
    p.add_argument("--book", type=Path, help="EchoTrace JSON, plain text or LaTeX file")
    p.add_argument("--target", metavar="SPEC", help="the audited model, backend:model[@url] "
                   "(e.g. smollm2, openai:gpt-4.1, openai:llama3@http://localhost:8000/v1)")
    add_device_option(p)
    p.add_argument("--helper", metavar="SPEC",
                   help="feedback and summary agent model (default: the target)")
    p.add_argument("--judge", metavar="SPEC", help="verifier model (default: the helper)")
    p.add_argument("--target-key-env", help="env variable with the target's API key")
    p.add_argument("--helper-key-env", help="env variable with the helper's API key")
    p.add_argument("--methods", default=",".join(_RECAP),
                   help=f"comma-separated, from {','.join(_RECAP)}; or '{WHOLE_BOOK}' alone: "
                   "the whole book by continuation (Ahmed, Cooper et al. 2026)")
    p.add_argument("--chapters", help="0-based chapter indices, e.g. 1,2")
    p.add_argument("--events-per-chapter", type=int)
    p.add_argument("--max-events", type=int)
    p.add_argument("--max-event-words", type=int, help="skip events longer than this")
    p.add_argument("--segment", action="store_true", help="re-segment with the summary agent")
    p.add_argument("--domain", choices=("book", "paper"))
    p.add_argument("--max-new-tokens", type=int, help="cap on tokens per attempt (default: "
                   "none; the released allowance, gold words + 1000, applies)")
    p.add_argument("--feedback-max-tokens", type=int,
                   help="feedback hint limit (default 4096; released: no limit)")
    p.add_argument("--timeout", type=float, help="seconds per model call (default: 60 + "
                   "1 per 20 tokens of the longest reply the run may ask for)")
    p.add_argument("--rounds", type=int, default=5, help="feedback rounds (max)")
    _add_recap_options(p)
    from recitation.extract.continue_cli import add_continue_options

    add_continue_options(p)
    p.add_argument("--concurrency", type=int, help="target: parallel requests")
    p.add_argument("--batch-size", type=int,
                   help="target: requests per batch (events per chunk = this x concurrency)")
    p.add_argument("--budget-tokens", type=int, help="stop the run after this many tokens")
    p.add_argument("--out", help="output folder (default ./extractions) or .json file")
    p.add_argument("--export", metavar="RUN", help="only write the file(s) of a finished run")
    p.add_argument("--no-cache", action="store_true")
    p.add_argument("--runs-dir", type=Path, default=None)
    p.set_defaults(func=cmd_extract)


def _add_recap_options(p: Any) -> None:
    """The feedback filter, the verifier, the jailbreaks and the summary agent."""
    p.add_argument("--filter-budget", type=float, default=180.0,
                   help="seconds to train the parrot model (cached per book)")
    p.add_argument("--filter-threshold", type=float, default=0.5)
    p.add_argument("--block-leaks", action="store_true", help="drop leaking hint lines")
    p.add_argument("--verifier", choices=("judge", "keywords", "judge_or_keywords",
                                          "judge_and_keywords"),
                   help="refusal check (default judge: keywords only when it gives no answer)")
    p.add_argument("--refusal-keywords", choices=("first_person", "broad"),
                   help="keyword set (default first_person; broad = before issue 8)")
    p.add_argument("--jailbreaks", help="comma-separated, in order (default static; opt-in: "
                   "past_tense, continuation)")
    p.add_argument("--prefix-prompt", choices=("recap", "continue"),
                   help="prefix probe prompt (default recap: the authors' title+word count)")
    p.add_argument("--summary-max-tokens", type=int,
                   help="summary agent reply limit (default 16384)")
    p.add_argument("--summary-temperature", type=float,
                   help="summary agent temperature (default 1.0, the paper's)")
    p.add_argument("--summary-prompt", choices=("paper", "recitation"),
                   help="summary agent prompt (default paper: appendix B)")
