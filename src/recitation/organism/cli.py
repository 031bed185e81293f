"""``recitation organism build`` and ``recitation organism show``."""

from __future__ import annotations

import argparse
import json
from typing import Any

EXAMPLES = """examples:
  recitation organism build                 # the default organism (see docs/organism.md)
  recitation organism build --quick         # the small CI organism
  recitation organism build --split book --epochs 4 --seed 1 --name books
  recitation organism show --quick --measure
  recitation detect --model organism:quick:epoch2 ...
  recitation organism build --quick --name quick-lora --lora --learning-rate 1e-3

checkpoints: epochN of the default organism, NAME:epochN of another (quick:epoch2); every
command takes them as the model spec organism:epochN / organism:NAME:epochN, and
'recitation organism path SPEC' prints the directory.
"""


def add_organism_parser(sub: Any) -> None:
    p = sub.add_parser("organism", help="the model organism: SmolLM2 fine-tuned on known "
                       "passages (a positive control)", epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    cmds = p.add_subparsers(dest="organism_cmd", required=True)
    b = cmds.add_parser("build", help="build (or reuse, when up to date) an organism")
    _add_build_options(b)
    b.set_defaults(func=cmd_build)
    s = cmds.add_parser("show", help="where an organism is, its epochs, losses and split")
    _add_name_options(s)
    s.add_argument("--measure", action="store_true", help="also probe every checkpoint: "
                   "LOSS AUC and verbatim continuation per dose (a minute or more)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_show)
    t = cmds.add_parser("path", help="the checkpoint directory of SPEC (epochN, NAME:epochN)")
    t.add_argument("spec")
    t.set_defaults(func=cmd_path)


def _describe(cfg: Any) -> str:
    """One line saying what is built."""
    if cfg.split == "work":
        kept = list(cfg.keep_epochs) or "every epoch"
        return (f"organism {cfg.name}: {cfg.work} read straight through "
                f"({'all' if not cfg.work_words else f'{cfg.work_words:,}+ words'}), "
                f"{cfg.passage_tokens}-token windows, {cfg.epochs} epochs (checkpoints kept: "
                f"{kept}), seed {cfg.seed}")
    return (f"organism {cfg.name}: {cfg.members} members ({cfg.members_per_dose} at each "
            f"dose {list(cfg.doses)}), {cfg.n_nonmembers} non-members, {cfg.passage_tokens}-"
            f"token passages, split by {cfg.split}, {cfg.epochs} epochs, seed {cfg.seed}")


def _add_name_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="the quick preset (name 'quick')")
    p.add_argument("--preset", default=None, choices=["default", "quick", "lowfpr",
                                                      "lowfpr-quick", "lowfpr-long", "book",
                                                      "book-quick"],
                   help="a preset by name (lowfpr: 500 members at doses 1 and 4, 1,000 "
                   "non-members, one epoch; the low-FPR benchmark's; lowfpr-quick: its CI "
                   "size, 10 members and 40 non-members; lowfpr-long: 256-token passages, 200 "
                   "members; book: the first "
                   "20,000 words of Pride and Prejudice read 16 times, checkpoints at "
                   "epochs 1, 4, 16; book-quick: its first two chapters)")
    p.add_argument("--name", default=None, help="organism name (default: the preset's)")


def _add_build_options(p: argparse.ArgumentParser) -> None:
    _add_name_options(p)
    p.add_argument("--source", default="pdnc", choices=["pdnc"], help="passages from")
    p.add_argument("--data-dir", default=None, help="PDNC folder (default: "
                   "$RECITATION_DATA/pdnc, else ../shared/data/pdnc)")
    p.add_argument("--split", default=None, choices=["passage", "book"],
                   help="members drawn by passage (default) or by whole novel")
    p.add_argument("--epochs", type=int, default=None)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--doses", type=int, nargs="+", default=None, metavar="N",
                   help="copies of a member in training (default 1 4 16)")
    p.add_argument("--members-per-dose", type=int, default=None, metavar="N")
    p.add_argument("--nonmembers", type=int, default=None, metavar="N",
                   help="default: as many as members")
    p.add_argument("--passage-tokens", type=int, default=None, metavar="N")
    p.add_argument("--learning-rate", type=float, default=None)
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--threads", type=int, default=None,
                   help="torch threads while training (default 2; part of the fingerprint)")
    p.add_argument("--lora", action="store_true", help="LoRA adapters instead of full "
                   "fine-tuning (needs peft: pip install 'recitation[organism]')")
    p.add_argument("--device", default=None, help="where it trains: auto (default: the "
                   "first CUDA GPU torch sees, else the CPU), cpu, cuda, cuda:N; on a GPU "
                   "with bfloat16 autocast (the manifest records device and dtype)")
    p.add_argument("--force", action="store_true", help="rebuild even when up to date")


def cmd_build(args: argparse.Namespace) -> int:
    from recitation.organism.build import build_organism
    from recitation.organism.config import make_config
    from recitation.runs.console import console

    cfg = make_config(quick=args.quick, preset=args.preset, name=args.name, source=args.source,
                      data_dir=args.data_dir, split=args.split, epochs=args.epochs,
                      seed=args.seed, doses=tuple(args.doses) if args.doses else None,
                      members_per_dose=args.members_per_dose, nonmembers=args.nonmembers,
                      passage_tokens=args.passage_tokens, learning_rate=args.learning_rate,
                      batch_size=args.batch_size, threads=args.threads,
                      lora=args.lora or None, device=args.device)
    console.print(_describe(cfg))

    def report(epoch: int, loss: float | None, seconds: float) -> None:
        what = "base model" if loss is None else f"training loss {loss:.4f}"
        console.print(f"  epoch {epoch}: {what} ({seconds:.0f} s)")

    result = build_organism(cfg, force=args.force, on_epoch=report)
    state = "up to date, reused" if result.reused else (
        f"built in {result.manifest['build_seconds']:.0f} s")
    console.print(f"{state}: {result.directory}")
    _print_epochs(result.manifest)
    return 0


def _name(args: argparse.Namespace) -> str:
    from recitation.organism.paths import DEFAULT_NAME, QUICK_NAME

    return str(args.name or args.preset or (QUICK_NAME if args.quick else DEFAULT_NAME))


def _print_epochs(manifest: dict[str, Any]) -> None:
    from recitation.runs.console import console

    name = manifest["name"]
    for e in manifest["epochs"]:
        loss = "-" if e["train_loss"] is None else f"{e['train_loss']:.4f}"
        console.print(f"  {name}:epoch{e['epoch']}  train loss {loss:>8}  "
                      f"({e['seconds']:.0f} s)")


def cmd_show(args: argparse.Namespace) -> int:
    from recitation.organism.paths import organism_dir, read_manifest
    from recitation.runs.console import console

    name = _name(args)
    manifest = read_manifest(name)
    directory = organism_dir(name)
    measured = _measure_all(directory, manifest) if args.measure else None
    if args.json:
        print(json.dumps({"directory": str(directory), "manifest": manifest,
                          "measured": measured}, indent=1))
        return 0
    split = manifest["split"]
    console.print(f"organism {name}: {directory}")
    console.print(f"  split by {manifest['config']['split']}: {split['members']} members "
                  f"{split['members_by_dose']} (by dose), {split['nonmembers']} "
                  f"non-members, {split['novels']} novels; seed {manifest['config']['seed']}")
    console.print(f"  built {manifest['created']} in {manifest['build_seconds']:.0f} s, "
                  f"{manifest['train_tokens_per_epoch']} training tokens per epoch")
    _print_epochs(manifest)
    for epoch, rows in (measured or {}).items():
        cells = "  ".join(f"dose {r['dose']}: NLL {r['mean_nll']:.2f}"
                          + (f" AUC {r['loss_auc']:.2f}" if r["loss_auc"] is not None else "")
                          + f" verbatim {r['verbatim']:.0%}" for r in rows)
        console.print(f"  epoch {epoch}: {cells}")
    return 0


def _measure_all(directory: Any, manifest: dict[str, Any]) -> dict[int, Any]:
    from recitation.organism.data import load_split
    from recitation.organism.measure import measure_checkpoint
    from recitation.organism.paths import SPLIT

    passages = load_split(directory / SPLIT)
    return {int(e["epoch"]): measure_checkpoint(directory / f"epoch{e['epoch']}",
                                                passages)["by_dose"]
            for e in manifest["epochs"]}


def cmd_path(args: argparse.Namespace) -> int:
    from recitation.organism.paths import organism_checkpoint

    print(organism_checkpoint(args.spec))
    return 0
