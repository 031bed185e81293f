"""PEARL: memorization as sensitivity of task performance to small input perturbations.

For a sample x, a perturbation family and intensities k = 0..K, PEARL prompts the model with
the perturbed input x_k ``outputs`` times (i in the papers, default 10) and measures each
output's *performance* against a reference. With ``perf[k]`` the mean performance at
intensity k (v1 eq. 2, stored for every k):

* **sensitivity** (v1 eq. 3): the largest change between consecutive intensities. As the
  authors compute it (``eval.py``: ``max |perf[j] - perf[j+1]|``) by default, ``absolute``;
  this reproduces all 27 rows of pearl-v1 table 4 (= pearl-v2 table 6). ``signed``, the
  largest *drop* ``max (perf[j] - perf[j+1])``, is our variant (25 of 27 rows).
* **GFD** (v2 eq. 3, Generalization Failure Density): the share of perturbed neighbours
  (k = 1..K) whose performance falls more than ``tau`` below the unperturbed one,
  ``mean_k 1[perf[0] - perf[k] > tau]``.
* **S_M** (v2 appendix A.1, expected positive drop): ``mean_k max(0, perf[0] - perf[k])``.

Higher values of all three mean "more likely memorized".

Performance is a *similarity* (higher = better), as in the papers' tables where the
unperturbed column is the largest: ``1 - NCD(output, reference)`` for completion tasks
(NCD as the authors' ``textdistance.zlib_ncd``, see :mod:`recitation.metrics.ncd`; the
output is cut to the reference's word count first) and ROUGE-L F1 for summarization.

Tasks (``Task``):

* ``completion`` — input = the first ``n - round(0.2 n)`` of the sample's n words (the
  authors' ``Truncation.from_end``), reference = the rest. A reference under
  ``MIN_REFERENCE_WORDS`` (40) words is near NCD's noise floor: :func:`short_reference`
  flags it (the authors' samples have 50-60-word references).
* ``code`` — input = the code prompt (HumanEval ``prompt``), reference = the canonical
  solution; without an explicit split, the first 80% of the lines. Generation stops at
  HumanEval's stop sequences (``CODE_STOP``).
* ``summarization`` — input = the whole sample inside a summarization instruction;
  reference = the model's own greedy output on the unperturbed input.

Every output j is sampled with its own seed (the same seed j at every intensity: common
random numbers, so differences between intensities are not sampling noise), hence every
call is deterministic, cached and resumed. At temperature 0 the ``outputs`` calls would be
identical and only one is made.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from recitation.corpus.chunking import split_at_word
from recitation.detect.perturb import ALL_PERTURBATIONS, Perturb
from recitation.methods import Access, AuditUse, Calls, MethodInfo
from recitation.metrics.ncd import Compressor
from recitation.models.base import GenerationRequest
from recitation.prompts import COPY_EXACTLY

TaskName = Literal["completion", "code", "summarization"]
SUMMARIZE_PROMPT = "Summarize the following text in one or two sentences.\n\n{text}"
CONTINUE_PROMPT = COPY_EXACTLY  # shared with the prefix probes: recitation.prompts
# HumanEval's (Chen et al., 2021) stop sequences: the function body ends at the next
# top-level statement
CODE_STOP = ("\nclass", "\ndef", "\n#", "\nif", "\nprint")
SensitivityMode = Literal["absolute", "signed"]
SENSITIVITY_MODES: tuple[SensitivityMode, ...] = ("absolute", "signed")
MIN_REFERENCE_WORDS = 40


# -- the formulas ----------------------------------------------------------------------
def sensitivity(perf: Sequence[float], mode: SensitivityMode = "absolute") -> float:
    """PEARL v1 eq. 3: the largest change between consecutive intensities — absolute as the
    authors' ``sensitivity_eval`` (default), or the largest signed drop (``signed``)."""
    if len(perf) < 2:
        raise ValueError("sensitivity needs the performance at two or more intensities")
    if mode not in SENSITIVITY_MODES:
        raise ValueError(f"unknown sensitivity mode {mode!r}; use one of {SENSITIVITY_MODES}")
    diffs = [perf[j] - perf[j + 1] for j in range(len(perf) - 1)]
    return max(abs(d) for d in diffs) if mode == "absolute" else max(diffs)


def generalization_failure_density(perf: Sequence[float], tau: float) -> float:
    """PEARL v2 eq. 3: share of perturbed neighbours k >= 1 with ``perf[0] - perf[k] > tau``."""
    if len(perf) < 2:
        raise ValueError("GFD needs the unperturbed and at least one perturbed performance")
    return sum(perf[0] - p > tau for p in perf[1:]) / (len(perf) - 1)


def expected_positive_drop(perf: Sequence[float]) -> float:
    """PEARL v2 appendix A.1, S_M: the mean of ``max(0, perf[0] - perf[k])`` over k >= 1."""
    if len(perf) < 2:
        raise ValueError("S_M needs the unperturbed and at least one perturbed performance")
    return sum(max(0.0, perf[0] - p) for p in perf[1:]) / (len(perf) - 1)


# -- tasks -------------------------------------------------------------------------------
@dataclass(frozen=True)
class TaskInput:
    """What PEARL perturbs (``input``) and what outputs are compared with (``reference``;
    ``None`` for summarization, where it is the model's own unperturbed answer)."""

    task: TaskName
    input: str
    reference: str | None


def n_input(n: int, fraction: float = 0.8) -> int:
    """How many of ``n`` units form the input: ``n - round(n * (1 - fraction))`` as the
    authors' ``from_end`` (split 20: ``n - round(n * 20 / 100)``), kept within 1..n-1."""
    ref_percent = round((1 - fraction) * 100)
    return min(n - 1, max(1, n - round(n * ref_percent / 100)))


def short_reference(ti: TaskInput, min_words: int = MIN_REFERENCE_WORDS) -> bool:
    """A completion reference shorter than ``min_words`` words (NCD is noisy there)."""
    return ti.task == "completion" and len((ti.reference or "").split()) < min_words


def split_words(text: str, fraction: float = 0.8) -> tuple[str, str]:
    """First ``n - round(0.2 n)`` whitespace words (original spacing kept) and the rest."""
    words = text.split()
    if len(words) < 2:
        raise ValueError(f"text too short to split into input and reference: {text!r}")
    return split_at_word(text, n_input(len(words), fraction))


def split_lines(code: str, fraction: float = 0.8) -> tuple[str, str]:
    """First ``fraction`` of the lines (at least one) and the rest, for code without a split."""
    lines = code.splitlines(keepends=True)
    if len(lines) < 2:
        return split_words(code, fraction)
    n = n_input(len(lines), fraction)
    return "".join(lines[:n]), "".join(lines[n:])


def make_task(task: TaskName, text: str, *, prompt: str | None = None,
              reference: str | None = None, fraction: float = 0.8) -> TaskInput:
    if task == "summarization":
        return TaskInput(task, text, None)
    if prompt is not None and reference is not None:
        return TaskInput(task, prompt, reference)
    inp, ref = split_lines(text, fraction) if task == "code" else split_words(text, fraction)
    return TaskInput(task, inp, ref)


# -- planning: which calls a sample needs --------------------------------------------------
@dataclass(frozen=True)
class PearlSettings:
    perturbations: tuple[str, ...] = ("bitflip", "synonym")
    max_intensity: int = 5
    outputs: int = 10
    temperature: float = 0.3  # the papers' API setting (gen.py); 0 = greedy, one output
    top_p: float = 1.0
    max_new_tokens: int | None = None  # None: from the reference's length
    gfd_tau: float = 0.2
    mode: Literal["completion", "chat"] = "completion"
    sensitivity: SensitivityMode = "absolute"
    ncd: Compressor = "zlib"  # "zlib9": our earlier NCD (level 9, header kept, one order)

    @property
    def n_outputs(self) -> int:
        """Distinct outputs per input: 1 when greedy (the others would be identical)."""
        return 1 if self.temperature == 0 else self.outputs


def output_seed(seed: int, j: int) -> int:
    """The sampling seed of output j (shared by all intensities and samples)."""
    return (seed * 1_000_003 + j) & 0x7FFFFFFF


def perturbation_seed(seed: int, sample_id: str, perturbation: str) -> int:
    return zlib.crc32(f"{seed}:{sample_id}:{perturbation}".encode())


def max_tokens_for(ti: TaskInput, settings: PearlSettings) -> int:
    if settings.max_new_tokens is not None:
        return settings.max_new_tokens
    if ti.task == "summarization":
        return 64
    ref = ti.reference or ""
    return min(256, max(8, math.ceil(len(ref) / 3) + 8))


def build_request(ti: TaskInput, text: str, settings: PearlSettings, *, seed: int | None,
                  greedy: bool = False) -> GenerationRequest:
    temp = 0.0 if greedy else settings.temperature
    kw: dict[str, Any] = dict(max_tokens=max_tokens_for(ti, settings), temperature=temp,
                              top_p=settings.top_p if temp > 0 else 1.0,
                              seed=seed if temp > 0 else None,
                              stop=CODE_STOP if ti.task == "code" else ())
    if ti.task == "summarization":
        return GenerationRequest.chat(SUMMARIZE_PROMPT.format(text=text), **kw)
    if settings.mode == "chat":
        return GenerationRequest.chat(CONTINUE_PROMPT.format(text=text), **kw)
    return GenerationRequest(prompt=text, **kw)


@dataclass
class SamplePlan:
    """The perturbed inputs and the request keys of one sample (indexes into a shared list)."""

    sample_id: str
    task: TaskInput
    inputs: dict[str, list[str]] = field(default_factory=dict)  # perturbation -> x_0..x_K
    calls: dict[str, list[list[int]]] = field(default_factory=dict)  # pert -> k -> j -> idx
    reference_call: int | None = None


class RequestPool:
    """Deduplicates requests: identical calls (e.g. x_0 shared by all perturbations) once."""

    def __init__(self) -> None:
        self.requests: list[GenerationRequest] = []
        self._index: dict[GenerationRequest, int] = {}

    def add(self, req: GenerationRequest) -> int:
        if req not in self._index:
            self._index[req] = len(self.requests)
            self.requests.append(req)
        return self._index[req]


def plan_sample(pool: RequestPool, sample_id: str, ti: TaskInput,
                perturbations: dict[str, Perturb], settings: PearlSettings,
                seed: int) -> SamplePlan:
    plan = SamplePlan(sample_id, ti)
    if ti.task == "summarization":
        plan.reference_call = pool.add(build_request(ti, ti.input, settings, seed=None,
                                                     greedy=True))
    for name, fn in perturbations.items():
        pseed = perturbation_seed(seed, sample_id, name)
        xs = [fn(ti.input, k, pseed) for k in range(settings.max_intensity + 1)]
        plan.inputs[name] = xs
        plan.calls[name] = [
            [pool.add(build_request(ti, x, settings, seed=output_seed(seed, j)))
             for j in range(settings.n_outputs)] for x in xs]
    return plan


# -- scoring -----------------------------------------------------------------------------
def cut_to_words(text: str, n_words: int) -> str:
    return " ".join(text.split()[:n_words])


def performance(ti: TaskInput, output: str, reference: str,
                compressor: Compressor = "zlib") -> float:
    """1 - NCD for completion tasks, ROUGE-L F1 for summarization (higher = better)."""
    if ti.task == "summarization":
        from recitation.metrics.rouge import rouge_l

        return rouge_l(reference, output).fmeasure
    from recitation.metrics.ncd import ncd

    cand = output if ti.task == "code" else cut_to_words(output, len(reference.split()))
    return 1.0 - float(ncd(cand, reference, compressor))


def score_plan(plan: SamplePlan, texts: Sequence[str], settings: PearlSettings) -> dict[str, Any]:
    """Per perturbation: per-intensity mean/std performance, sensitivity, GFD and S_M."""
    ti = plan.task
    reference = ti.reference if plan.reference_call is None else texts[plan.reference_call]
    out: dict[str, Any] = {"task": ti.task, "reference": reference, "input": ti.input}
    for name, per_k in plan.calls.items():
        perf, spread = [], []
        for idxs in per_k:
            vals = [performance(ti, texts[i], reference or "", settings.ncd) for i in idxs]
            mean = sum(vals) / len(vals)
            perf.append(mean)
            spread.append(math.sqrt(sum((v - mean) ** 2 for v in vals) / len(vals)))
        out[name] = {
            "perf_mean": perf, "perf_std": spread,
            "sensitivity": sensitivity(perf, settings.sensitivity),
            "gfd": generalization_failure_density(perf, settings.gfd_tau),
            "s_m": expected_positive_drop(perf),
            "perturbed_inputs": plan.inputs[name][1:],
            "example_output_k0": texts[per_k[0][0]],
        }
    return out


def pearl_report_notes(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """For the detect report: the PEARL definitions used (bit-flip ids, sensitivity, NCD,
    temperature) and the samples whose reference is under ``MIN_REFERENCE_WORDS`` words."""
    pearl = [r["pearl"] for r in records if r.get("pearl")]
    if not pearl:
        return {}
    keys = ("bitflip_scale", "bitflip_tokenizer", "sensitivity_mode", "ncd", "temperature")
    notes: dict[str, Any] = {k: pearl[0].get(k) for k in keys}
    short = [r["sample"]["id"] for r in records if r.get("pearl", {}).get("warnings")]
    notes["short_references"] = short
    if short:
        notes["warning"] = (f"{len(short)} of {len(pearl)} samples have a PEARL reference "
                            f"under {MIN_REFERENCE_WORDS} words (NCD is noisy there)")
    return notes


# -- metadata (recitation.methods): one method per perturbation ----------------------------
def _pearl_calls(p: Mapping[str, Any]) -> Calls:
    """Generations per sample for one perturbation: (K + 1) inputs x the distinct outputs
    (1 when greedy), + 1 greedy reference for summarization; x_0 is shared by all."""
    outputs = 1 if p.get("temperature", 0.3) == 0 else int(p.get("outputs", 10))
    k = int(p.get("max_intensity", 5))
    return Calls(generate=(k + 1) * outputs + (p.get("task") == "summarization"))


_PEARL_PAPERS = {
    "bitflip": "pearl-v1.md §3.1, §3.3; pearl-v2.md §3 (GFD), §A.1 (S_M)",
    "synonym": "pearl-v2.md §3 (synonym substitution, GFD), §A.1 (S_M); pearl-v1.md §3.3",
    "whitespace": "pearl-v1.md §3.3 (sensitivity); the perturbation is ours",
    "char_swap": "pearl-v1.md §3.3 (sensitivity); the perturbation is ours",
    "case_flip": "pearl-v1.md §3.3 (sensitivity); the perturbation is ours",
    "bitflip_tokens": "pearl-v1.md §3.1, §3.3 (bit flips; of the target's token ids: ours)",
}


AUDIT = AuditUse(run="detect", order=30, off="pearl", off_flag="--no-pearl", catalogue=4,
                 primary=("pearl_bitflip_sensitivity", "pearl_synonym_sensitivity"),
                 why="PEARL's sensitivity (pearl-v1.md §3.3) under the audit's first "
                 "perturbation: one score for the family")


def _pearl_info(pert: str) -> MethodInfo:
    access = {Access.GENERATE} | ({Access.TOKENIZER} if pert == "bitflip_tokens" else set())
    return MethodInfo(
        name=f"pearl_{pert}", kind="detector", title=f"PEARL, {pert}",
        select=f"detect --detectors pearl --perturbations {pert}",
        paper=_PEARL_PAPERS.get(pert, "pearl-v1.md §3.3 (sensitivity); the perturbation is "
                                "ours"),
        access=frozenset(access),
        writes=tuple(f"pearl_{pert}_{stat}" for stat in ("sensitivity", "gfd", "s_m"))
        + ("pearl",),
        calls=_pearl_calls,
        calls_formula="(max_intensity + 1) x outputs generations (1 output when greedy; "
        "x_0 shared by all perturbations; + 1 greedy reference for summarization)",
        job="detect", family="pearl", options=("perturbations", "max_intensity", "outputs",
                                               "temperature", "task", "mode", "gfd_tau"),
        summary=f"task performance under {pert} perturbations of growing intensity: "
        "sensitivity, GFD and S_M; higher means member", audit=AUDIT)


METHODS: dict[str, MethodInfo] = {f"pearl_{p}": _pearl_info(p) for p in ALL_PERTURBATIONS}
