"""Positive control for the probes: SmolLM2 fine-tuned on the very passages the probes ask
about, for half of the novels (by book), then name cloze and CSG on the base model and on the
fine-tuned one. Memorization accuracy should rise on the trained novels and not on the
others; :func:`verdict` says whether it did (a check that can fail).

Training text: for each member novel, the name-cloze passages (unmasked) and the original,
uncorrupted CSG passages that the probes' jobs sample with the same seed and sizes; each
``dose`` times per epoch, full fine-tuning with the organism's training loop
(:mod:`recitation.organism.train`). Small on purpose: it runs on a CPU in minutes. The
fine-tuned model is kept in the model cache under a key of everything its weights depend on
(texts, settings, base weights, library versions, the training code's source), so a second
control with the same inputs probes the same model without training it again.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from recitation.probes.csg import csg_scores
from recitation.probes.name_cloze import per_novel_accuracy
from recitation.runs.jobs import Job, make_job


def probe_jobs(novels: Sequence[str], seed: int, n_cloze: int, n_csg: int,
               max_new_tokens: int = 12, scoring: str = "generate",
               context_sentences: int = 10) -> tuple[Job, Job]:
    nc = make_job("name_cloze", {"novels": list(novels), "n": n_cloze, "scoring": scoring,
                                 "max_new_tokens": max_new_tokens}, seed)
    cs = make_job("csg", {"novels": list(novels), "n": n_csg, "scoring": scoring,
                          "max_new_tokens": max_new_tokens,
                          "context_sentences": context_sentences}, seed)
    return nc, cs


def training_texts(members: Sequence[str], seed: int, n_cloze: int, n_csg: int,
                   context_sentences: int = 10, scoring: str = "generate") -> list[str]:
    """The unmasked name-cloze passages and original CSG passages (none when ``n_csg`` is
    0) of the member novels, as the probes sample them with ``scoring``."""
    from recitation.probes.novel import load_novel

    nc, cs = probe_jobs(members, seed, n_cloze, max(1, n_csg), scoring=scoring,
                        context_sentences=context_sentences)
    texts = [it.payload["passage"].replace("[MASK]", it.payload["answer"])
             for it in nc.items()]
    if n_csg == 0:
        return texts
    novels = {Path(m).name: load_novel(m).text for m in members}
    for it in cs.items():
        a, b = it.payload["span"]
        texts.append(novels[it.payload["novel"]][a:b])
    return texts


BATCH_SIZE = 4
CONTROL_FORMAT = 1
"""Bumped whenever the control model changes for the same key (a change to the training
code's source changes the key by itself)."""


def train_control(texts: Sequence[str], out: Path, *, dose: int = 8, epochs: int = 3,
                  learning_rate: float = 1e-4, seed: int = 0, threads: int = 2,
                  say: Callable[[str], None] = lambda _: None) -> Path:
    """Fine-tune the embedded SmolLM2 on ``texts`` and save it to ``out`` (a transformers
    directory ``LocalModel(str(out))`` loads)."""
    from recitation.models.local import LocalModel
    from recitation.organism import train
    from recitation.organism.data import Passage

    # on the CPU in float32 wherever it runs: its key (control_key) names no device
    loaded = LocalModel("smollm2", threads=threads, dtype="float32",
                        device="cpu").load_private()
    model, tok = loaded.model, loaded.tokenizer
    passages = [Passage(f"c{i}", "", 0, len(t), len(tok(t)["input_ids"]),
                        hashlib.sha256(t.encode()).hexdigest(), True, dose, t)
                for i, t in enumerate(texts)]
    say(f"fine-tuning SmolLM2 on {len(texts)} passages "
        f"({sum(p.n_tokens for p in passages)} tokens) x {dose} copies x {epochs} epochs")
    with train.deterministic(seed, threads):
        optimizer = train.make_optimizer(model, learning_rate)
        for epoch in range(1, epochs + 1):
            t0 = time.perf_counter()
            loss = train.train_epoch(model, optimizer, tok, passages, seed=seed, epoch=epoch,
                                     batch_size=BATCH_SIZE)
            say(f"epoch {epoch}/{epochs}: loss {loss:.3f} ({time.perf_counter() - t0:.0f} s)")
    train.save_checkpoint(model, tok, out, lora=False)
    return out


def control_key(texts: Sequence[str], *, dose: int, epochs: int, learning_rate: float,
                seed: int, threads: int) -> dict[str, Any]:
    """Everything the control model's weights depend on: the texts, the training settings,
    the base model's files, the torch / transformers versions and the training code."""
    from recitation.organism.build import base_identity, library_versions
    from recitation.organism.config import TRAINING_CODE, source_digest

    return {"format": CONTROL_FORMAT,
            "texts": [hashlib.sha256(t.encode()).hexdigest() for t in texts],
            "dose": dose, "epochs": epochs, "learning_rate": learning_rate, "seed": seed,
            "threads": threads, "batch_size": BATCH_SIZE, "base": base_identity("smollm2"),
            "versions": library_versions(),
            "code": source_digest(*TRAINING_CODE, __name__)}


def control_model(texts: Sequence[str], out: Path, *, retrain: bool = False,
                  say: Callable[[str], None] = lambda _: None, **settings: Any) -> bool:
    """The fine-tuned control model in ``out``: trained once per :func:`control_key` into
    the model cache's ``controls/`` and linked from there (``retrain``: train it again).
    Returns whether a cached model was reused."""
    from recitation._cachedir import cached_folder, link_files
    from recitation.models.local import model_cache_dir
    from recitation.organism.config import digest

    key = control_key(texts, **settings)
    name = digest(key)[:16]

    def build(folder: Path) -> None:
        train_control(texts, folder, say=say, **settings)
        (folder / "key.json").write_text(json.dumps(key, indent=1) + "\n", "utf-8")

    entry, reused = cached_folder(model_cache_dir() / "controls", name, build,
                                  rebuild=retrain)
    if reused:
        say(f"the fine-tuned control model is cached ({entry}): the same texts, settings, "
            "base weights, library versions and training code; --retrain trains it again")
    shutil.rmtree(out, ignore_errors=True)
    link_files(entry, out, skip=("key.json",))
    return reused


Hits = dict[str, dict[str, bool]]
"""measure -> probe item ("novel/id") -> memorization hit."""


def measure(model: Any, novels: Sequence[str], seed: int, n_cloze: int,
            n_csg: int, scoring: str = "generate",
            context_sentences: int = 10) -> tuple[dict[str, dict[str, float]], Hits]:
    """novel -> name-cloze accuracy and CSG-M (not run when ``n_csg`` is 0) on ``model``;
    and the hit of every item (name cloze: correct; CSG: a memorization hit)."""
    nc, cs = probe_jobs(novels, seed, n_cloze, max(1, n_csg), scoring=scoring,
                        context_sentences=context_sentences)
    out: dict[str, dict[str, float]] = {}
    hits: Hits = {}
    for job, key in ((nc, "name_cloze"), (cs, "csg_m"))[: 2 if n_csg else 1]:
        items = job.items()
        recs = asyncio.run(job.run_items(items, model))
        vals = ({n: a for n, (a, _) in per_novel_accuracy(recs).items()} if key == "name_cloze"
                else {n: s["csg_memorization"] for n, s in csg_scores(recs).items()})
        for n, v in vals.items():
            out.setdefault(n, {})[key] = v
        hit = "correct" if key == "name_cloze" else "memorization"
        hits[key] = {it.id: bool(r[hit]) for it, r in zip(items, recs, strict=True)}
    return out, hits


def paired_test(base: Mapping[str, bool], trained: Mapping[str, bool],
                novels: set[str]) -> dict[str, Any]:
    """The items of ``novels`` that the fine-tuned model gets right and the base model wrong
    (gained) and the reverse (lost); the one-sided exact McNemar p-value (scipy's binomial
    test on the discordant items): the chance of at least that many gains among them if
    training changed no answer's odds of being right."""
    from scipy.stats import binomtest

    keys = [k for k in base if k.split("/", 1)[0] in novels and k in trained]
    gained = sum(trained[k] and not base[k] for k in keys)
    lost = sum(base[k] and not trained[k] for k in keys)
    p = binomtest(gained, gained + lost, 0.5, alternative="greater").pvalue if (
        gained + lost) else 1.0
    return {"items": len(keys), "gained": gained, "lost": lost, "p": float(p)}


def verdict(base: dict[str, dict[str, float]], trained: dict[str, dict[str, float]],
            members: set[str], measure_name: str,
            hits: tuple[Hits, Hits] | None = None) -> dict[str, Any]:
    """Mean rise of ``measure_name`` on member and on other novels; ``passed`` when the
    members' rise is positive and larger than the others'. With ``hits`` (base, fine-tuned)
    the paired test of each group (:func:`paired_test`) joins it; it does not change the
    verdict."""
    def rise(group: list[str]) -> float:
        vals = [trained[n][measure_name] - base[n][measure_name] for n in group
                if measure_name in trained.get(n, {}) and measure_name in base.get(n, {})]
        return sum(vals) / len(vals) if vals else float("nan")

    mem = [n for n in base if n in members]
    oth = [n for n in base if n not in members]
    rm, ro = rise(mem), rise(oth)
    out = {"measure": measure_name, "rise_members": rm, "rise_others": ro,
           "passed": rm > 0 and rm > ro}
    if hits is not None:
        b, t = hits[0].get(measure_name, {}), hits[1].get(measure_name, {})
        out["test_members"] = paired_test(b, t, set(mem))
        out["test_others"] = paired_test(b, t, set(oth))
    return out


MEASURES = {"name_cloze": "name cloze", "csg_m": "CSG-M (memorization)"}


def measure_label(measure_name: str, scoring: str) -> str:
    """The report's name of a measure; with scoring ``fill`` CSG-M is its cloze variant."""
    if measure_name == "csg_m" and scoring == "fill":
        return "CSG-M (cloze: explicit quotes, scored at the mask)"
    return MEASURES[measure_name]


def probed_model(model: Any, cache: bool) -> Any:
    """``model`` as the probes ask it: with ``cache``, behind the cross-run response cache
    (keyed on its weights and decoding code), so a second control re-reads the scores of an
    unchanged model. Every probe pass still reaches the backend as one call of all its
    texts (the bare model's prefix groups, hence its numbers, to the last bit)."""
    if not cache:
        return model
    from recitation.models.managed import Limits, ManagedModel
    from recitation.runs.store import ResponseCache, default_cache_path

    return ManagedModel(model, cache=ResponseCache(default_cache_path()),
                        limits=Limits(concurrency=1, batch_size=1 << 30))


def run_control(members: Sequence[str], others: Sequence[str], out_dir: Path, *,
                seed: int = 0, n_cloze: int = 4, n_csg: int = 2, scoring: str = "logprob",
                dose: int = 8, epochs: int = 3, learning_rate: float = 1e-4,
                context_sentences: int = 10, threads: int | None = None,
                retrain: bool = False, cache: bool = True,
                say: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Train on the members' probed passages, probe base and fine-tuned model on members and
    others; the figures and a verdict per measure. ``threads``: default as the local
    backend's (``RECITATION_THREADS``, else every core). The fine-tuned model is trained
    once per content key and then reused (:func:`control_model`; ``retrain``: again); with
    ``cache`` the probes' scores go through the response cache (:func:`probed_model`)."""
    from recitation.models.local import LocalModel

    def probed(spec: str) -> Any:
        return probed_model(LocalModel(spec, threads=threads), cache)

    threads = threads or LocalModel("smollm2").threads
    novels = [*members, *others]
    texts = training_texts(members, seed, n_cloze, n_csg, context_sentences, scoring)
    model_dir = out_dir / "model"
    reused = control_model(texts, model_dir, retrain=retrain, say=say, dose=dose,
                           epochs=epochs, learning_rate=learning_rate, seed=seed,
                           threads=threads)
    say("probing the base model")
    base, base_hits = measure(probed("smollm2"), novels, seed, n_cloze, n_csg,
                              scoring=scoring, context_sentences=context_sentences)
    say("probing the fine-tuned model")
    trained, trained_hits = measure(probed(str(model_dir)), novels, seed, n_cloze, n_csg,
                                    scoring=scoring, context_sentences=context_sentences)
    names = {Path(m).name for m in members}
    verdicts = [verdict(base, trained, names, m, (base_hits, trained_hits)) for m in MEASURES
                if any(m in v for v in base.values())]
    return {"members": sorted(names), "others": sorted(Path(o).name for o in others),
            "training_texts": len(texts), "dose": dose, "epochs": epochs,
            "model_reused": reused,
            "learning_rate": learning_rate, "scoring": scoring, "seed": seed,
            "n_cloze": n_cloze, "n_csg": n_csg, "context_sentences": context_sentences,
            "base": base, "trained": trained,
            "hits": {"base": base_hits, "trained": trained_hits},
            "verdicts": verdicts, "passed": bool(verdicts) and all(v["passed"]
                                                                   for v in verdicts)}


def _tests(v: Mapping[str, Any]) -> str:
    """The paired tests of a verdict, when it has them."""
    if "test_members" not in v:
        return ""
    parts = []
    for key, who in (("test_members", "trained"), ("test_others", "others")):
        t = v[key]
        parts.append(f"{who}: {t['gained']} of {t['items']} items gained, {t['lost']} lost, "
                     f"one-sided exact McNemar p = {t['p']:.3g}")
    return (" Paired, item by item: " + "; ".join(parts) + " (p: the chance of at least "
            "that many gains if fine-tuning changed no answer's odds; a few items cannot "
            "reach a small p).")


def report(result: dict[str, Any]) -> str:
    """The Markdown section: per novel and measure, base -> fine-tuned, and the verdicts."""
    def label(m: str) -> str:
        return measure_label(m, result["scoring"])

    lines = ["## Positive control", "",
             f"SmolLM2 fine-tuned on the probed passages of {', '.join(result['members'])} "
             f"({result['training_texts']} texts, {result['dose']} copies, "
             f"{result['epochs']} epochs, lr {result['learning_rate']}); scoring "
             f"'{result['scoring']}'; not trained: {', '.join(result['others'])}.", "",
             "| novel | trained | measure | base | fine-tuned | rise |",
             "|---|---|---|---|---|---|"]
    for n in sorted(result["base"]):
        for m in MEASURES:
            if m in result["base"][n] and m in result["trained"].get(n, {}):
                b, t = result["base"][n][m], result["trained"][n][m]
                lines.append(f"| {n} | {'yes' if n in result['members'] else 'no'} | "
                             f"{label(m)} | {b:.2f} | {t:.2f} | {t - b:+.2f} |")
    lines.append("")
    for v in result["verdicts"]:
        word = "PASSED" if v["passed"] else "FAILED"
        lines.append(f"- **{word}** ({label(v['measure'])}): mean rise on the trained "
                     f"novels {v['rise_members']:+.2f}, on the others {v['rise_others']:+.2f}"
                     " (passes when the first is positive and larger)." + _tests(v))
    lines += ["", "A pass shows the probe detects memorization that was put there on purpose; "
              "it does not say how much of any real model's training data the probe finds."]
    return "\n".join(lines) + "\n"
