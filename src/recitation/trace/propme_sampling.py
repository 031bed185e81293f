"""How PROPME's target decodes (the ``propme`` job's ``sampling``, issue 47 D6).

``greedy`` (the default) is the paper's: "Run each model on the three prompt sets using
temperature 0 and greedy decoding": one reply per prompt.

``authors`` is what the authors' released code does (N-essuno/PropMe,
``memorization_experiment/generation/run_generations_all.sh``, which runs
``generate_vllm.py`` with ``--do_sample --temperature 0.7 --top_p 0.95 --num_generations 10
--max_new_tokens 256 --max_input_tokens 256 --seed 42``): every prompt sent for
:data:`SAMPLES` completions at temperature 0.7, top_p 0.95, the prompt cut to its last 256
tokens (vLLM's ``truncate_prompt_tokens``), and every set of more than 1,000 prompts
subsampled to 1,000 (``subsample_prompt_sets.py``: ``random.Random(42).sample`` of the
prompt lines, kept in file order; done there after generation, here before, which keeps the
same prompts).

Here each sample is a work item of its own (``<item>-s<j>``) whose request carries seed
``42 + j``: vLLM gives the ``j``-th of a seeded request's ``n`` completions seed
``seed + j`` (``vllm/v1/engine/parallel_sampling.py``), so a run reproduces, the run store
replays it on resume, and sample ``j`` draws alike whatever else is in the batch (the
local backend seeds each row's generator). Each sample is traced as its own generation
(identical ones count once under the authors' metrics: ``propme_aggregate`` dedups by
text). The prompt is cut where the target's tokenizer is known (a local model), else sent
whole and the summary says so; a backend that takes no seed (Anthropic's API) is said not
to reproduce.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from recitation.models.base import GenerationRequest, Model
from recitation.runs.jobs import WorkItem

Sampling = Literal["greedy", "authors"]
SAMPLINGS: tuple[Sampling, ...] = ("greedy", "authors")
TEMPERATURE = 0.7
TOP_P = 0.95
SEED = 42
SAMPLES = 10
PROMPT_TOKENS = 256
MAX_PROMPTS = 1000


def sample_count(sampling: Sampling, samples: int | None) -> int:
    """Replies per prompt: one greedy, else ``samples`` (default :data:`SAMPLES`)."""
    return 1 if sampling == "greedy" else samples or SAMPLES


def capped(items: list[WorkItem]) -> list[WorkItem]:
    """Every set of more than :data:`MAX_PROMPTS` prompts cut to that many, as the authors'
    ``subsample_prompt_sets.py`` (``sorted(random.Random(42).sample(range(n), 1000))``: the
    same prompts for a prompt list in the same order); each kept item records its set's
    size (``set_size``)."""
    by_set: dict[str, list[int]] = {}
    for i, it in enumerate(items):
        by_set.setdefault(it.payload["set"], []).append(i)
    keep: dict[int, int] = {}
    for rows in by_set.values():
        chosen = (rows if len(rows) <= MAX_PROMPTS else
                  [rows[k] for k in sorted(random.Random(SEED).sample(range(len(rows)),
                                                                      MAX_PROMPTS))])
        keep.update((i, len(rows)) for i in chosen)
    return [WorkItem(it.id, {**it.payload, "set_size": keep[i]}) if keep[i] > MAX_PROMPTS
            else it for i, it in enumerate(items) if i in keep]


def expanded(items: list[WorkItem], sampling: Sampling, samples: int | None
             ) -> list[WorkItem]:
    """The work items: the prompts as they are (greedy), else the capped prompts' samples,
    ``<id>-s<j>`` with ``sample: j`` in the payload."""
    if sampling == "greedy":
        return items
    n = sample_count(sampling, samples)
    return [WorkItem(f"{it.id}-s{j}", {**it.payload, "sample": j})
            for it in capped(items) for j in range(n)]


def sampled(req: GenerationRequest, sample: int | None) -> GenerationRequest:
    """The request of sample ``sample`` (None: the greedy request as it is)."""
    if sample is None:
        return req
    return dataclasses.replace(req, temperature=TEMPERATURE, top_p=TOP_P, seed=SEED + sample)


@dataclass(frozen=True)
class Cut:
    """A prompt as sent: ``sent`` (its last :data:`PROMPT_TOKENS` tokens), its length in
    the target's tokens (None: tokenizer not known, sent whole) and whether it was cut."""

    sent: str
    tokens: int | None = None
    cut: bool = False


def cut_prompts(prompts: list[str], model: Model, sampling: Sampling) -> list[Cut]:
    """Each prompt cut to its last :data:`PROMPT_TOKENS` tokens of the target's tokenizer
    under ``authors`` (vLLM's ``truncate_prompt_tokens``); as it is otherwise."""
    tok = model.tokenizer() if sampling == "authors" and model.capabilities.tokenizer \
        else None
    if tok is None:
        return [Cut(p) for p in prompts]
    out = []
    for p in prompts:
        ids = tok.encode(p)
        out.append(Cut(tok.decode(ids[-PROMPT_TOKENS:]), len(ids), True)
                   if len(ids) > PROMPT_TOKENS else Cut(p, len(ids)))
    return out


def record_fields(payload: dict[str, Any], cut: Cut, seeded: bool) -> dict[str, Any]:
    """What a sampled record adds: the sampling parameters, the prompt's length in tokens
    and, where it was cut, the text sent (``prompt_sent``); nothing for a greedy one."""
    if "sample" not in payload:
        return {}
    out: dict[str, Any] = {
        "sampling": {"name": "authors", "temperature": TEMPERATURE, "top_p": TOP_P,
                     "seed": SEED + payload["sample"], "max_prompt_tokens": PROMPT_TOKENS,
                     "seeded": seeded},
        "prompt_tokens": cut.tokens, "prompt_cut": cut.cut}
    if cut.cut:
        out["prompt_sent"] = cut.sent
    return out


def describe(sampling: Sampling, samples: int | None) -> dict[str, Any]:
    """The report's ``sampling``: the name and what it sends."""
    if sampling == "greedy":
        return {"name": "greedy", "temperature": 0.0, "samples": 1}
    return {"name": "authors", "temperature": TEMPERATURE, "top_p": TOP_P,
            "samples": sample_count(sampling, samples), "seeds": f"{SEED} + sample",
            "max_prompt_tokens": PROMPT_TOKENS, "max_prompts": MAX_PROMPTS}


def notes(records: Iterable[dict[str, Any]], sampling: Sampling, samples: int | None
          ) -> list[str]:
    """What the summary says about the sampling: which was used, the prompts cut, the sets
    subsampled, and what could not be done as the authors do."""
    if sampling == "greedy":
        return []
    firsts = [r for r in records if r.get("sample") == 0 and "sampling" in r]
    n = sample_count(sampling, samples)
    out = [f"sampling: the authors' (--sampling authors; the paper says greedy): {n} "
           f"sample(s) per prompt at temperature {TEMPERATURE}, top_p {TOP_P}, seed "
           f"{SEED} + sample; prompts cut to their last {PROMPT_TOKENS} tokens; sets over "
           f"{MAX_PROMPTS:,} prompts subsampled to {MAX_PROMPTS:,} (seed {SEED})"]
    cut = sum(bool(r["prompt_cut"]) for r in firsts)
    if cut:
        out.append(f"{cut} prompt(s) longer than {PROMPT_TOKENS} tokens sent as their last "
                   f"{PROMPT_TOKENS} (prompt_sent)")
    whole = sum(r["prompt_tokens"] is None for r in firsts)
    if whole:
        out.append(f"{whole} prompt(s) not cut to their last {PROMPT_TOKENS} tokens: the "
                   "target's tokenizer is not known here (the authors: vLLM's "
                   "truncate_prompt_tokens); sent whole")
    sizes = {r["set"]: r["set_size"] for r in firsts if "set_size" in r}
    out += [f"{s}: {MAX_PROMPTS:,} of {size:,} prompts (subsampled, seed {SEED})"
            for s, size in sizes.items()]
    if any(not r["sampling"]["seeded"] for r in firsts):
        out.append("the target's backend takes no seed (or no sampling parameters): its "
                   "samples do not reproduce, and a resume samples again")
    return out
