"""``recitation audit``: one command, one report (see :mod:`recitation.audit.run`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from recitation.models.config import add_device_option

SETTINGS: tuple[tuple[str, str, Any, str], ...] = (
    ("--passages", "passages", int, "text passages (0: all)"),
    ("--sample", "sample", str, "a book's passages: chapters (drawn at random by chapter: "
     "a whole-book estimate) or even (evenly spaced)"),
    ("--n-controls", "controls", int, "control passages (0: all)"),
    ("--passage-words", "passage_words", int, "words per passage"),
    ("--max-new-tokens", "max_new_tokens", int, "reply limit of prefix probing"),
    ("--recap-passages", "recap_passages", int, "text passages, and as many controls, also "
     "run through RECAP's feedback loop (0: no RECAP)"),
    ("--recap-rounds", "recap_rounds", int, "RECAP feedback rounds at most (released: 5)"),
    ("--recap-hint-tokens", "recap_hint_tokens", int, "reply limit of RECAP's feedback helper"),
    ("--pearl-outputs", "pearl_outputs", int, "PEARL outputs per input"),
    ("--pearl-max-intensity", "pearl_max_intensity", int, "PEARL's highest intensity"),
    ("--target-fpr", "target_fpr", float, "false-positive rate the verdicts are calibrated to"),
    ("--fdr-q", "fdr_q", float, "several works (a catalogue): the false discovery rate of "
     "the works found"),
    ("--bootstrap", "n_bootstrap", int, "bootstrap resamples of the confidence intervals"),
    ("--null-model", "null_model", str, "without controls: the reference model of the "
     "reproduction null (a model that cannot have memorized the text)"),
    ("--null-alpha", "null_alpha", float, "the reproduction null's level over the passages"),
    ("--whole-book-calls", "whole_book_calls", int, "--whole-book: calls per model at most"),
    ("--whole-book-tokens", "whole_book_tokens", int, "--whole-book: reply limit per call"),
    ("--seed", "seed", int, "seed"),
    ("--timeout", "timeout", float, "seconds an API model's request may take (a server on "
     "this machine: one that times out is not sent again, it fails)"),
    ("--concurrency", "concurrency", int, "requests an API model is sent at once"),
    ("--signals", "signals", str, "a token-signal store (recitation signals): the "
     "detectors read the texts' scores from it, scoring only what it lacks"),
    ("--tokenizer", "tokenizer", str, "a served model's tokenizer (a folder holding "
     "tokenizer.json, or that file): DC-PDD then runs over the API"),
)
"""The audit's command-line settings: (flag, AuditSettings field, type, help)."""


class _SettingsHelp(argparse.HelpFormatter):
    """Appends each setting's AuditSettings default to its help, read when the help is
    shown (building the parser for any other command does not import the settings)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        field = action.dest.removeprefix("setting_")
        if action.dest == field or action.const is not None:  # not a setting; a switch
            return action.help
        from recitation.audit.run import AuditSettings

        info = AuditSettings.model_fields[field]
        value = info.get_default(call_default_factory=True)
        shown = f"{value}" if value is not None else (info.description or "none")
        return f"{action.help} (default: {shown.replace('%', '%%')})"


def add_audit_parser(sub: Any) -> None:
    p = sub.add_parser("audit", help="audit a text on one or more models; writes an HTML, "
                       "Markdown and JSON report", formatter_class=_SettingsHelp)
    p.add_argument("--text", action="append", default=[], metavar="BOOK|FOLDER|JSONL",
                   help="the audited text: a .txt book, a folder of .txt, a .jsonl of "
                   "passages, kjv:famous-long, or organism:quick:members (repeatable)")
    p.add_argument("--model", action="append", default=[], metavar="SPEC",
                   help="model spec (repeatable; default: the embedded smollm2)")
    add_device_option(p)
    p.add_argument("--controls", action="append", default=[], metavar="SRC",
                   help="text the model cannot have seen, same kinds as --text (repeatable; "
                   "default: a built-in set where one fits, else no verdict)")
    p.add_argument("--corpus", action="append", default=[], metavar="INDEX",
                   help="an infini-gram index of the training corpus: adds tracing")
    p.add_argument("--redact", action="store_true", help="reports show lengths, hashes and "
                   "span statistics instead of gold and model text")
    # settings (dest setting_<field>): default None, so only what the user set reaches
    # AuditSettings, whose defaults, shown in the help, are the only ones
    for flag, field, kind, text in SETTINGS:
        p.add_argument(flag, dest=f"setting_{field}", type=kind, default=None,
                       metavar="SECONDS" if field == "timeout" else
                       {float: "X", str: "SPEC"}.get(kind, "N"), help=text)
    p.add_argument("--no-pearl", dest="setting_pearl", action="store_false", default=None,
                   help="skip PEARL (the costliest black-box detector)")
    p.add_argument("--whole-book", dest="setting_whole_book", action="store_true",
                   default=None, help="also extract the whole book by continuation and "
                   "report how much of it came out (a book file as --text)")
    p.add_argument("--no-cache", dest="setting_cache", action="store_false", default=None,
                   help="do not use the response cache")
    p.add_argument("--trust-logprobs", dest="setting_trust_logprobs", action="store_true",
                   default=None, help="use each model's log-probabilities even when their "
                   "integrity check fails (it still runs and is reported)")
    p.add_argument("--detector-option", action="append", default=[], dest="detector_option",
                   metavar="FAMILY.KEY=VALUE", help="an option of a detector family that "
                   "declares its own (a plug-in's; repeatable), for the detect runs it is in")
    p.add_argument("--yes", action="store_true", help="make paid calls without asking (the "
                   "cost estimate is printed first either way)")
    p.add_argument("--resume", metavar="AUDIT", default=None,
                   help="finish a killed audit (its folder or id); other options ignored "
                   "but --timeout and --concurrency (its API models' requests) and --yes")
    p.add_argument("--runs-dir", type=Path, default=None)
    p.set_defaults(func=cmd_audit)


def settings_from(args: argparse.Namespace) -> Any:
    """AuditSettings from the options the user set (the others: the model's defaults)."""
    from recitation.audit.run import AuditSettings

    fields = [f for _, f, _, _ in SETTINGS] + ["pearl", "cache", "trust_logprobs",
                                               "whole_book"]
    given = {f: getattr(args, f"setting_{f}") for f in fields
             if getattr(args, f"setting_{f}") is not None}
    if args.corpus:
        given["corpus"] = list(args.corpus)
    if getattr(args, "detector_option", None):
        from recitation.method_options import parse_pairs

        given["detector_options"] = parse_pairs(args.detector_option)
    return AuditSettings(**given)


def cmd_audit(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from recitation.audit.run import create_audit
    from recitation.errors import ConfigError
    from recitation.runs.audits import find_audit
    from recitation.runs.console import console
    from recitation.runs.runner import default_runs_dir

    calls: dict[str, Any] = {}
    if args.resume:
        folder = find_audit(args.resume, args.runs_dir or default_runs_dir())
        calls = {k: v for k in ("timeout", "concurrency")
                 if (v := getattr(args, f"setting_{k}")) is not None}
    else:
        try:
            settings = settings_from(args)
        except ValidationError as e:
            raise ConfigError(f"audit: {e.errors()[0]['loc'][0]}: "
                              f"{e.errors()[0]['msg']}") from None
        folder = create_audit(args.text, args.model or ["smollm2"], args.controls, settings,
                              runs_dir=args.runs_dir, redact=args.redact)
    console.print(f"audit folder: {folder}")
    return finish_audit(folder, yes=args.yes, call_settings=calls)


def finish_audit(folder: Path, *, yes: bool = False,
                 call_settings: dict[str, Any] | None = None) -> int:
    """Print the cost estimate (and ask before paid calls), execute the audit's runs (its
    API models' with ``call_settings``: a resumed audit's --timeout, --concurrency), write
    the reports, print the verdict table."""
    from rich.markup import escape

    from recitation.audit.run import execute_audit
    from recitation.report.collect import collect
    from recitation.report.table import verdict_lines
    from recitation.report.write import write_findings
    from recitation.runs.audits import load_manifest
    from recitation.runs.console import console, err_console

    manifest = load_manifest(folder)
    for note in manifest.get("notices", []):  # the defaults that changed what is audited
        err_console.print(f"notice: {escape(note)}")
    c = manifest["controls"]
    console.print(f"controls: {c['reason']}" + (f" ({c['n']} passages)" if c["n"] else ""))
    if not _go_ahead(folder, yes):
        console.print(f"not started; 'recitation audit --resume {folder}' starts it")
        return 1
    outcomes = execute_audit(folder, say=console.print, call_settings=call_settings)
    findings = collect(folder)  # once: the three reports and the table below
    paths = write_findings(findings, folder)
    console.print("Audit verdict", style="bold")
    for line in verdict_lines(findings):  # readable at any width (report/table.py)
        console.print(line, highlight=False, markup=False)
    _section_lines(findings, console.print)
    console.print(f"report: {paths['html']}\n        {paths['md']}\n        {paths['json']}")
    bad = [o for o in outcomes if o.status != "completed"]
    if bad:
        more = " --timeout SECONDS" if _timed_out(bad) else ""
        console.print(f"{len(bad)} run(s) did not complete: 'recitation audit --resume "
                      f"{folder}{more}' finishes them")
        return 4
    return 0


def _timed_out(outcomes: list[Any]) -> bool:
    """True when an item of these runs failed for want of time on a server on this machine
    (models/endpoint.py: resumed, it needs a longer --timeout)."""
    from recitation.errors import LocalServerTimeout
    from recitation.runs.store import RunStore

    for o in outcomes:
        with RunStore(o.run_dir) as store:
            if any(str(c.get("error") or "").startswith(LocalServerTimeout.__name__)
                   for c in store.calls()):
                return True
    return False


def _go_ahead(folder: Path, yes: bool) -> bool:
    """The estimate of every model's calls, printed; True to run them (audit/estimate.py)."""
    from recitation.audit.estimate import confirm, estimate_audit
    from recitation.runs.console import console

    estimates = estimate_audit(folder)
    for e in estimates:
        console.print(e.line())
    return confirm(estimates, folder, yes=yes)


def _section_lines(findings: dict[str, Any], say: Any) -> None:
    """What the whole-book and catalogue sections found, under the verdict table."""
    from recitation.report import book_extraction
    from recitation.report.catalogue import headline
    from recitation.report.whole_book import lines

    sections = findings.get("sections", {})
    for line in lines(sections["whole_book"]) if "whole_book" in sections else []:
        say(line)
    if "book_extraction" in sections:
        for line in book_extraction.lines(sections["book_extraction"]):
            say(line)
    if cat := sections.get("catalogue"):
        for spec, r in cat["models"].items():
            say(f"catalogue, {spec}: {headline(r, cat['n_works'])}")
