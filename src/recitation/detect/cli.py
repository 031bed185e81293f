"""``recitation detect``: membership detection from the command line (thin: builds a run
config for the ``detect`` job, reports the calls it will make, runs it, stores verdicts)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from recitation.method_options import FLAG
from recitation.models.config import add_device_option

EXAMPLES = """examples:
  recitation detect --members kjv:famous-long --controls builtin:kjv-devotional-long --outputs 5
  recitation detect --members humaneval:0-19 --controls builtin:fresh-code --detectors pearl
  recitation detect --model openai:gpt-4o-mini --members my.jsonl \\
      --controls fresh.jsonl --detectors pearl --estimate-only
  recitation detect --model openai:llama3@http://localhost:8000/v1 --detectors pearl

model specs (--model, --reference-model): backend:model[@url]; a bare name or path is local.
--backend/--base-url/--reference-backend still work but are deprecated aliases.
"""


def add_detect_parser(sub: Any) -> None:
    p = sub.add_parser("detect", help="membership detection: PEARL and white-box scores, "
                       "calibrated on controls", epilog=EXAMPLES, formatter_class=_ParamsHelp)
    from recitation.models.config import backend_names

    p.add_argument("--model", default="smollm2", metavar="SPEC",
                   help="audited model, backend:model[@url] (default: embedded SmolLM2)")
    add_device_option(p)
    p.add_argument("--backend", default=None, choices=backend_names(),
                   help="deprecated: write --model BACKEND:MODEL")
    p.add_argument("--base-url", default=None, help="deprecated: write --model BACKEND:MODEL@URL")
    p.add_argument("--api-key-env", default=None, help="NAME of the env var holding the key")
    p.add_argument("--members", action="append", default=None, metavar="SRC",
                   help="audited samples: PATH.jsonl | PATH.txt | book:PATH | kjv:famous | "
                   "kjv:REF;REF | humaneval[:A-B] | builtin:NAME (repeatable; the "
                   "default: PEARL-length samples)")
    p.add_argument("--controls", action="append", default=None, metavar="SRC",
                   help="text the model cannot have seen, same sources")
    p.add_argument("--limit", type=int, default=None, help="samples per source (default: all)")
    from recitation.methods import families

    p.add_argument("--detectors", nargs="+", default=None, choices=families("detector"),
                   help="detector families (recall: ReCaLL, dcpdd: "
                   "DC-PDD, neighbourhood: Mattern et al., all need token log-probabilities; "
                   "ezmia: EZ-MIA, needs --reference-model; camia: CAMIA, needs 10+ "
                   "controls; samia: SaMIA, text only; "
                   "'recitation methods --kind detector' lists every method with its family)")
    _add_scoring_options(p)
    _add_pearl_options(p)
    p.add_argument("--reference-model", default=None, metavar="SPEC",
                   help="second model for 'reference', backend:model[@url]")
    p.add_argument("--reference-backend", default=None, choices=backend_names(),
                   help="deprecated: write --reference-model BACKEND:MODEL")
    p.add_argument("--reference-prefix", default=None, help='e.g. "<bos>" for Gemma')
    _add_calibration_options(p)
    p.add_argument("--budget-tokens", type=int, default=None)
    p.add_argument("--budget-dollars", type=float, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="seconds an API model's request may take (default 60)")
    p.add_argument("--no-cache", action="store_true")
    _add_signal_options(p)
    p.add_argument("--estimate-only", action="store_true",
                   help="print the calls and cost the run would need, and stop")
    p.add_argument("--runs-dir", type=Path, default=None)
    p.set_defaults(func=cmd_detect)


def _add_signal_options(p: argparse.ArgumentParser) -> None:
    """A token-signal store, and filling it on Ray first."""
    p.add_argument("--signals", default=None, metavar="DIR",
                   help="a token-signal store (`recitation signals`): scores read from it, "
                        "texts it lacks scored once and added")
    p.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                   help="with --signals: score the texts on a Ray cluster into the store "
                   "first (its address, or none for a cluster of this command's own on "
                   "127.0.0.1; see recitation signals --ray)")
    p.add_argument("--workers", type=int, default=2,
                   help="with --ray: actors, each loading the model once (default 2)")


def _add_calibration_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target-fpr", type=float, default=None,
                   help="verdicts flag a new non-member with probability <= this (conformal "
                   "threshold over n + 1 controls; needs >= 1/FPR - 1 controls)")
    p.add_argument("--calibration", default=None, choices=["conformal", "empirical"],
                   help="threshold rule: conformal (out-of-sample FPR bound) or "
                   "empirical (former: FPR on the controls themselves; understates the FPR)")
    p.add_argument("--unlabelled", action="store_true",
                   help="audited samples are not known members: no AUC / TPR")
    p.add_argument("--trust-logprobs", action="store_true",
                   help="use the model's log-probabilities even when the integrity check "
                   "before the first scoring call fails (it still runs and is recorded; "
                   "`recitation check MODEL` runs it alone)")
    p.add_argument("--bootstrap", dest="n_bootstrap", type=int, default=None,
                   help="bootstrap resamples")


def _add_scoring_options(p: argparse.ArgumentParser) -> None:
    """Options of the score-based detectors: a family's own (``--detector-option``), n-gram
    Min-K%, ReCaLL, DC-PDD, SaMIA, the neighbourhood attack, EZ-MIA."""
    p.add_argument(FLAG, action="append", default=[], dest="detector_option",
                   metavar="FAMILY.KEY=VALUE",
                   help="an option of a detector family that declares its own (a plug-in's; "
                   "repeatable), checked against the family's options; 'recitation methods "
                   "--kind detector --json' lists them under 'options'")
    p.add_argument("--min-k-ngram", type=int, default=None, metavar="N",
                   help="N > 1: also Min-K%% over the means of N-token windows "
                   "(min_k_K_ngramN; 1: off)")
    p.add_argument("--recall-shots", type=int, default=None, metavar="N",
                   help="ReCaLL: the first N controls form the non-member prefix (and get "
                   "no ReCaLL score)")
    p.add_argument("--dcpdd-corpus", default=None, metavar="kjv|PATH",
                   help="DC-PDD reference corpus for token frequencies: kjv (public domain, "
                   "installed) or a .txt / .jsonl (field 'text') file")
    p.add_argument("--dcpdd-a", type=float, default=None,
                   help="DC-PDD upper bound per token (the authors')")
    p.add_argument("--tokenizer", default=None, metavar="PATH",
                   help="the model's tokenizer, for a served model (an API exposes none): a "
                   "folder holding tokenizer.json, or that file; DC-PDD counts its reference "
                   "corpus with it, after checking it tokenizes as the server does")
    p.add_argument("--samia-samples", type=int, default=None, metavar="N",
                   help="SaMIA: sampled continuations per sample (the authors')")
    p.add_argument("--samia-max-tokens", type=int, default=None, metavar="N",
                   help="SaMIA: new tokens per continuation (default: 1,024 less the "
                   "prompt, the authors' max_length)")
    p.add_argument("--samia-words", default=None, choices=["authors", "whitespace"],
                   help="SaMIA: split the candidates and the reference on single spaces "
                   "(authors: split(\" \"), a newline stays inside a word) or on any "
                   "whitespace (ours, for hard-wrapped text)")
    p.add_argument("--neighbours", type=int, default=None, metavar="N",
                   help="neighbourhood: one-word neighbours per sample (MIMIR's)")
    p.add_argument("--ezmia-max-tokens", type=int, default=None, metavar="N",
                   help="EZ-MIA: tokens of each text scored (the authors')")
    p.add_argument("--ezmia-saturate", action="store_true", default=None,
                   help="EZ-MIA (ours): a text the fine-tune gets right almost everywhere, or "
                   "whose every error-zone token gained, scores highest instead of 0.0")
    p.add_argument("--camia-signs", default=None, metavar="FILE",
                   help="CAMIA: a JSON object of -1 or 1 for each of the authors' 25 keys "
                   "(benchmarks/camia_directions.py --keys writes one from a development "
                   "organism); default: one fixed sign per group of 11")


def _add_pearl_options(p: argparse.ArgumentParser) -> None:
    """PEARL options: perturbations, outputs, decoding and the published-vs-ours variants."""
    p.add_argument("--perturbations", nargs="+", default=None, help="PEARL's perturbations")
    p.add_argument("--task", default=None, choices=["auto", "completion", "summarization"],
                   help="PEARL's task")
    p.add_argument("--mode", default=None, choices=["completion", "chat"],
                   help="completion or chat prompts")
    p.add_argument("--outputs", type=int, default=None, help="outputs per intensity (i)")
    p.add_argument("--max-intensity", type=int, default=None, help="PEARL's highest intensity")
    p.add_argument("--temperature", type=float, default=None,
                   help="sampling temperature (the papers' setting)")
    p.add_argument("--greedy", action="store_true",
                   help="greedy decoding (temperature 0: one output per input)")
    p.add_argument("--bitflip-scale", default=None,
                   choices=["published", "utf8-percent"],
                   help="published: each bit of the token ids flips with probability k/1000 "
                   "(the authors' code); utf8-percent: k%% of the UTF-8 bits (our variant)")
    p.add_argument("--bitflip-tokenizer", default=None, choices=["auto", "o200k", "target"],
                   help="token ids of the published bit flip: o200k (GPT-4o, as the "
                   "authors) when installed, else the target's (auto)")
    p.add_argument("--sensitivity", default=None, choices=["absolute", "signed"],
                   help="absolute: largest |perf[k] - perf[k+1]| (as published); signed: "
                   "largest drop")
    p.add_argument("--ncd", default=None, choices=["zlib", "zlib9"],
                   help="zlib: textdistance's zlib_ncd, as the authors; zlib9: our earlier "
                   "NCD (level 9, header kept, one order)")
    p.add_argument("--passage-words", type=int, default=None,
                   help="words per passage of book/.txt sources")
    p.add_argument("--max-new-tokens", type=int, default=None,
                   help="per generation (default: from the reference's length)")
    p.add_argument("--gfd-tau", type=float, default=None, help="PEARL's GFD threshold")


PARAMS: tuple[str, ...] = (
    "members", "controls", "limit", "detectors", "perturbations", "task", "mode", "outputs",
    "max_intensity", "temperature", "gfd_tau", "bitflip_scale", "bitflip_tokenizer",
    "sensitivity", "ncd", "passage_words", "max_new_tokens", "target_fpr", "calibration",
    "n_bootstrap", "reference_prefix", "min_k_ngram", "recall_shots", "dcpdd_corpus",
    "dcpdd_a", "tokenizer", "samia_samples", "samia_max_tokens", "samia_words", "neighbours",
    "ezmia_max_tokens", "ezmia_saturate", "signals")
"""The options that are DetectParams fields of the same name: an option left out takes the
field's default (:func:`_params`), the one place it is written."""


def param_defaults() -> dict[str, Any]:
    """The defaults of :data:`PARAMS`, read from DetectParams."""
    from recitation.detect.job import DetectParams

    return {f: DetectParams.model_fields[f].get_default(call_default_factory=True)
            for f in PARAMS}


class _ParamsHelp(argparse.RawDescriptionHelpFormatter):
    """Appends each DetectParams option's default to its help, read when the help is shown
    (building the parser for another command imports no detector)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.dest not in PARAMS or action.default is not None or not action.help:
            return action.help
        value = param_defaults()[action.dest]
        shown = " ".join(value) if isinstance(value, list) else str(value)
        return f"{action.help} (default: {shown.replace('%', '%%')})"


def _params(args: argparse.Namespace) -> dict[str, Any]:
    """DetectParams from the options: those given, the fields' defaults for the others."""
    params = param_defaults() | {f: v for f in PARAMS
                                 if (v := getattr(args, f, None)) is not None}
    if args.greedy:
        params["temperature"] = 0.0
    params["labelled"] = not args.unlabelled
    params["trust_logprobs"] = bool(getattr(args, "trust_logprobs", False))
    if args.detector_option:
        from recitation.method_options import check_options, parse_pairs

        params["detector_options"] = check_options(  # typed values in the run's config
            "detector", parse_pairs(args.detector_option), params["detectors"])
    if getattr(args, "camia_signs", None):
        params["camia_signs"] = _json_object(args.camia_signs, "--camia-signs")
    if args.reference_model:
        params["reference_model"] = _model_spec(args.reference_model, args.reference_backend,
                                                None, None, "--reference-model")
    return params


def _json_object(path: str, flag: str) -> dict[str, Any]:
    """The JSON object in the file ``path`` (a ConfigError naming ``flag`` otherwise)."""
    import json

    from recitation.errors import ConfigError

    try:
        got = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(f"{flag} {path}: {e}") from None
    if not isinstance(got, dict):
        raise ConfigError(f"{flag} {path}: not a JSON object")
    return got


def _model_spec(spec: str, backend: str | None, base_url: str | None, key_env: str | None,
                flag: str) -> dict[str, Any]:
    """The spec grammar, with the deprecated backend / base-url aliases (warned about)."""
    import sys

    from recitation.models.config import resolve_model_spec

    cfg = resolve_model_spec(spec, backend=backend, base_url=base_url, key_env=key_env,
                             flag=flag)
    if backend is not None or base_url is not None:
        form = f"{cfg['backend']}:{cfg['model']}" + (f"@{cfg['base_url']}"
                                                     if cfg.get("base_url") else "")
        print(f"warning: the backend / base-url options are deprecated; write {flag} {form}",
              file=sys.stderr)
    return cfg


def build_config(args: argparse.Namespace) -> Any:
    from recitation.runs.config import parse_config

    model = _model_spec(args.model, args.backend, args.base_url, args.api_key_env, "--model")
    model |= {"batch_size": args.batch_size, "concurrency": args.concurrency}
    if args.timeout is not None:
        model["timeout"] = args.timeout
    return parse_config({
        "job": "detect", "name": "detect", "seed": args.seed, "model": model,
        "budget": {"max_tokens": args.budget_tokens, "max_dollars": args.budget_dollars},
        "cache": not args.no_cache, "params": _params(args)}, source="detect")


def _warn_short_references(job: Any) -> None:
    """On stderr: samples whose PEARL reference is under 40 words, and the bit flip's ids."""
    import sys

    from recitation.detect.pearl import MIN_REFERENCE_WORDS, short_reference

    if "pearl" not in job.params.detectors:
        return
    if "bitflip" in job.params.perturbations:
        src = job.bitflip_tokenizer(None)[1]
        print(f"PEARL bit flip: {job.params.bitflip_scale} scale, token ids from "
              f"{src if 'o200k' in src else 'the target model tokenizer'}", file=sys.stderr)
    short = []
    for s in job.samples():
        try:
            if short_reference(job.task_input(s)):
                short.append(s.id)
        except ValueError:
            continue
    if short:
        print(f"warning: {len(short)} PEARL samples have a reference (last 20%) under "
              f"{MIN_REFERENCE_WORDS} words, near NCD's noise floor (the authors' samples: "
              f"~260 words): {', '.join(short[:5])}{' ...' if len(short) > 5 else ''}",
              file=sys.stderr)


def _fill_on_ray(args: argparse.Namespace, job: Any) -> None:
    """``--ray``: every text the score-based families need, scored on a Ray cluster into the
    ``--signals`` store first (what the store already holds is not scored again); the run
    then reads them from the store."""
    from pathlib import Path

    from recitation.errors import ConfigError
    from recitation.runs.console import console
    from recitation.signals.on_ray import score_on_ray

    if not args.signals:
        raise ConfigError("--ray fills a signal store: give it with --signals DIR (a folder "
                          "every Ray worker reaches)")
    texts = job.scoring_texts()
    done = score_on_ray(Path(args.signals), args.model, texts, address=args.ray,
                        workers=args.workers)
    console.print(f"Ray: {done.scored} of {done.texts} texts scored into {args.signals} "
                  f"({done.texts - done.scored} were there)")


def cmd_detect(args: argparse.Namespace) -> int:
    from recitation.detect.results import estimate_calls
    from recitation.models.registry import capabilities_of
    from recitation.runs.console import console, execute_and_print
    from recitation.runs.jobs import make_job
    from recitation.runs.runner import create_run, stored_report

    cfg = build_config(args)
    job = make_job("detect", cfg.params, cfg.seed)
    est = estimate_calls(job, cfg)  # type: ignore[arg-type]
    if capabilities_of(cfg.model.backend).local:
        cost = "$0 (local model)"
    elif est["priced"]:
        cost = f"${est['estimated_cost_usd']:.4f}"
    else:
        cost = "unknown (model not in the price table; add it under 'prices')"
    console.print(
        f"detect on {cfg.model.backend}/{cfg.model.model}: {est['samples']} samples -> "
        f"{est['model_calls']} model calls ({est['generate_calls']} generations, "
        f"{est['score_calls']} scorings, {est['reference_score_calls']} reference scorings); "
        f"about {est['input_tokens']} input and at most {est['output_tokens']} output tokens; "
        f"estimated cost {cost}")
    _warn_short_references(job)
    if args.estimate_only:
        return 0
    if args.ray:
        _fill_on_ray(args, job)
    run_dir = create_run(cfg, args.runs_dir)
    code = execute_and_print(run_dir)  # the run's finalize step stores the report
    report = stored_report(run_dir) or {"detectors": {}}
    console.print(f"scores: results table; calibrated verdicts: meta 'detect_report' in "
                  f"{run_dir / 'run.sqlite'} ({len(report['detectors'])} detectors)")
    return code
