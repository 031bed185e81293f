"""``recitation probe name-cloze|csg`` and ``recitation task quote-attribution``: each makes
one resumable run (``recitation resume RUN`` continues it)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from recitation.models.config import add_device_option
from recitation.probes.scoring import SCORINGS
from recitation.runs.console import console, execute_and_print

_JOBS = {"name-cloze": "name_cloze", "csg": "csg"}


def _run(job: str, args: argparse.Namespace, params: dict[str, Any]) -> int:
    from recitation.models.config import parse_model_spec
    from recitation.runs.config import parse_config
    from recitation.runs.runner import create_run

    params["novels"] = [str(Path(d).resolve()) for d in args.novels]
    cfg = parse_config({"job": job, "name": job, "seed": args.seed,
                        "model": parse_model_spec(args.model), "params": params}, source=job)
    run_dir = create_run(cfg, args.runs_dir)
    console.print(f"run directory: {run_dir}")
    return execute_and_print(run_dir)


def cmd_probe(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"n": args.n, "max_new_tokens": args.max_new_tokens,
                              "scoring": args.scoring}
    if args.probe == "name-cloze":
        params["passages"] = args.passages
        if args.released:
            params["released"] = str(Path(args.released).resolve())
    if args.probe == "csg":
        params["main_speakers"] = args.main_speakers
        params["corruption"], params["answers"] = args.corruption, args.answers
        if args.replacements:
            params["replacements"] = str(Path(args.replacements).resolve())
    return _run(_JOBS[args.probe], args, params)


def cmd_contamination(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"fraction": args.fraction, "ks": args.ks}
    if args.max_records:
        params["max_records"] = args.max_records
    return _run("contamination", args, params)


def cmd_task(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"chunk_tokens": args.chunk_tokens,
                              "stride_tokens": args.stride_tokens, "strategy": args.strategy,
                              "min_quotes": args.min_quotes,
                              "max_new_tokens": args.max_new_tokens, "unwrap": args.unwrap,
                              "unit": args.unit}
    if args.max_chapters:
        params["max_chapters"] = args.max_chapters
    return _run("quote_attribution", args, params)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--novels", nargs="+", required=True, metavar="DIR",
                   help="novel folders in PDNC format (novel_text.txt, quotation_info.csv, "
                   "character_info.csv)")
    p.add_argument("--model", default="smollm2", metavar="SPEC",
                   help="model spec, backend:model[@url] (default: the embedded SmolLM2)")
    add_device_option(p)
    p.add_argument("--seed", type=int, default=0, help="sampling of passages and quotes")
    p.add_argument("--runs-dir", type=Path, default=None)


def _probe_options(p: argparse.ArgumentParser, name: str) -> None:
    """The options of one probe only."""
    if name == "name-cloze":
        p.add_argument("--passages", choices=("authors", "windows", "released"),
                       default="authors",
                       help="authors: one passage per single-token mention, by the rules of "
                       "the authors' released passages (default); windows: ours, every "
                       "40-60 token window with one mention; released: the authors' "
                       "released passages themselves (--released)")
        p.add_argument("--released", type=Path, default=None, metavar="DIR",
                       help="the data folder of deezer/llms_quotation_attribution, holding "
                       "<novel>/<novel>.name_cloze.txt (for --passages released)")
    if name == "csg":
        p.add_argument("--main-speakers", type=int, default=5, metavar="K",
                       help="the quotes of each novel's K characters with the most quotes "
                       "(the authors: 4-5 main speakers by hand); 0: every non-minor one")
        p.add_argument("--replacements", type=Path, default=None, metavar="DIR",
                       help="the authors' hand-made tables, DIR/<novel>/id2replacements.pkl "
                       "(or .json): their speakers and names")
        p.add_argument("--corruption", choices=("substring", "word"), default="substring",
                       help="substring: the authors', each name replaced wherever it occurs, "
                       "inside words too (default); word: ours, whole words only")
        p.add_argument("--answers", choices=("table", "aliases"), default="table",
                       help="a memorization hit names one of: table, the names the "
                       "replacement table replaces (the authors', default); aliases: ours, "
                       "PDNC's main name and aliases of the speaker")


def _contamination_parser(psub: Any) -> None:
    p = psub.add_parser("contamination", help="Min-K%% of verbalized quotation records")
    _common(p)
    p.add_argument("--fraction", type=float, default=0.2, help="records per novel (paper: 0.2)")
    p.add_argument("--max-records", type=int, default=0, help="at most N per novel (0: no cap)")
    p.add_argument("--ks", type=float, nargs="+", default=[5, 10, 20, 30, 40, 50], metavar="K",
                   help="the k (in %%) of Min-K%%: the authors' 5 10 20 30 40 50 (default); "
                   "the paper reports 10 20 30")
    p.set_defaults(func=cmd_contamination)


def add_probe_parser(sub: Any) -> None:
    probe = sub.add_parser("probe", help="book memorization probes on PDNC-format novels "
                           "(docs/probes.md)")
    psub = probe.add_subparsers(dest="probe_cmd", required=True)
    for name, helptext in (("name-cloze", "name cloze: the masked character name"),
                           ("csg", "Corrupted-Speaker-Guessing")):
        p = psub.add_parser(name, help=helptext)
        _common(p)
        p.add_argument("--n", type=int, default=100, help="passages per novel (name cloze) "
                       "or quotes per quote type and novel (CSG); the paper: 100")
        p.add_argument("--max-new-tokens", type=int, default=50)
        p.add_argument("--scoring", choices=SCORINGS, default="generate",
                       help="generate: the paper's prompt and an exact match (default); "
                       "logprob: ours, for white-box models, the most likely of the novel's "
                       "names; fill: ours, CSG's cloze variant scored at the passage's "
                       "[MASK], explicit quotes only (docs/probes.md)")
        _probe_options(p, name)
        p.set_defaults(func=cmd_probe, probe=name)
    _contamination_parser(psub)
    p = psub.add_parser("control", help="positive control: fine-tune SmolLM2 on the probed "
                        "passages of some novels; memorization must rise on those only")
    p.add_argument("--members", nargs="+", required=True, metavar="DIR",
                   help="novel folders to train on (PDNC format)")
    p.add_argument("--others", nargs="+", required=True, metavar="DIR",
                   help="novel folders probed but not trained on")
    p.add_argument("--out", type=Path, required=True, metavar="DIR",
                   help="directory for the fine-tuned model, control.md and control.json")
    p.add_argument("--n-cloze", type=int, default=4, help="name-cloze passages per novel")
    p.add_argument("--n-csg", type=int, default=2,
                   help="CSG quotes per quote type and novel (0: name cloze only)")
    p.add_argument("--scoring", choices=SCORINGS, default="logprob",
                   help="how both probes answer (see `probe csg --help`)")
    p.add_argument("--context-sentences", type=int, default=10,
                   help="CSG passage: sentences before and after the quote (the paper: 10)")
    p.add_argument("--dose", type=int, default=8, help="copies of each passage per epoch")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--learning-rate", type=float, default=1e-4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--retrain", action="store_true",
                   help="fine-tune again even when the model cache holds a control model "
                   "with the same texts, settings, base weights, versions and training code")
    p.add_argument("--no-cache", action="store_true",
                   help="probe without the response cache (by default a model probed before, "
                   "same weights and code, is answered from it)")
    p.set_defaults(func=cmd_control)


def cmd_control(args: argparse.Namespace) -> int:
    """Exit 0 when every verdict passes, 1 when one fails (a check that can fail)."""
    import json

    from recitation.probes import control
    from recitation.probes.novel import load_novel

    for d in [*args.members, *args.others]:
        load_novel(d)  # a bad folder fails here, before minutes of training
    args.out.mkdir(parents=True, exist_ok=True)
    result = control.run_control(
        args.members, args.others, args.out, seed=args.seed, n_cloze=args.n_cloze,
        n_csg=args.n_csg, scoring=args.scoring, dose=args.dose, epochs=args.epochs,
        learning_rate=args.learning_rate, context_sentences=args.context_sentences,
        retrain=args.retrain, cache=not args.no_cache, say=console.print)
    text = control.report(result)
    (args.out / "control.md").write_text(text, encoding="utf-8")
    (args.out / "control.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(text)
    console.print(f"wrote {args.out / 'control.md'} and {args.out / 'control.json'}")
    return 0 if result["passed"] else 1


def add_task_parser(sub: Any) -> None:
    task = sub.add_parser("task", help="downstream tasks (quotation attribution)")
    tsub = task.add_subparsers(dest="task_cmd", required=True)
    p = tsub.add_parser("quote-attribution", help="attribute every quote of each chapter")
    _common(p)
    p.add_argument("--chunk-tokens", type=int, default=4096,
                   help="chunk length in the model's tokens (the paper: 4096; use less for "
                   "a small context window)")
    p.add_argument("--stride-tokens", type=int, default=1024, help="overlap of chunks")
    p.add_argument("--strategy", choices=["incremental", "first"], default="incremental")
    p.add_argument("--min-quotes", type=int, default=10)
    p.add_argument("--max-chapters", type=int, default=0,
                   help="only the first N chapters with quotes of each novel (0: all)")
    p.add_argument("--max-new-tokens", type=int, default=2000,
                   help="the reply's token limit (the authors: 2000)")
    p.add_argument("--no-unwrap", dest="unwrap", action="store_false",
                   help="show the chunk's raw hard-wrapped lines (default: joined as the "
                   "authors' clean_context)")
    p.add_argument("--unit", choices=["subquote", "quote"], default="subquote",
                   help="subquote: each span of a quotation split by narration apart (the "
                   "authors' unit, default); quote: the whole quotation as one")
    p.set_defaults(func=cmd_task)
    p = tsub.add_parser("analyse", help="table 2 and propensity matching from probe and "
                        "task runs (docs/probes.md)")
    p.add_argument("runs", nargs="+", help="run directories or ids (name_cloze, csg, "
                   "quote_attribution, contamination)")
    p.add_argument("--group2", default="", help="comma-separated novel folders of group 2 "
                   "(default: PDNC's June 2023 release)")
    p.add_argument("--out", type=Path, default=None, help="Markdown file (and .json beside)")
    p.add_argument("--control", type=Path, default=None, metavar="JSON",
                   help="control.json of `recitation probe control`: its verdict joins the "
                   "report")
    p.add_argument("--propensity-penalty", choices=["none", "l2"], default="none",
                   help="the propensity model: plain maximum likelihood (default) or "
                   "scikit-learn's L2 penalty (C = 1)")
    p.add_argument("--leave-outcome-out", action="store_true",
                   help="match each outcome that is also a covariate (overall accuracy) on "
                   "a propensity model without it")
    p.add_argument("--runs-dir", type=Path, default=None)
    p.set_defaults(func=cmd_analyse)


def cmd_analyse(args: argparse.Namespace) -> int:
    import json

    from recitation.probes.analysis import PDNC_SECOND_RELEASE, per_novel_figures, report
    from recitation.runs.runner import find_run
    from recitation.runs.store import RunStore

    runs = []
    for ref in args.runs:
        with RunStore(find_run(ref, args.runs_dir)) as store:
            cfg = store.get_meta("config") or {}
            runs.append((cfg.get("job", ""), cfg.get("params", {}),
                         [r for _, r in store.results()]))
    group2 = (frozenset(args.group2.split(",")) if args.group2 else PDNC_SECOND_RELEASE)
    text, numbers = report(per_novel_figures(runs), group2,
                           penalty=None if args.propensity_penalty == "none" else "l2",
                           leave_outcome_out=args.leave_outcome_out)
    if args.control:
        from recitation.probes.control import report as control_report

        ctl = json.loads(args.control.read_text(encoding="utf-8"))
        text += "\n" + control_report(ctl)
        numbers["control"] = ctl
    if args.out:
        args.out.write_text(text, encoding="utf-8")
        args.out.with_suffix(".json").write_text(json.dumps(numbers, indent=2, default=str),
                                                 encoding="utf-8")
        console.print(f"wrote {args.out} and {args.out.with_suffix('.json')}")
    else:
        print(text)
    return 0
