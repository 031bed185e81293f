"""Tracing: index build, SimpleTrace and query latency, each against its baseline in one run.

1. **Index build** of a byte-level index with metadata and unigram counts: recitation's
   in-process builder (pydivsufsort) against infini-gram's own indexer (its Rust
   ``rust_indexing``, ``--cpus 2``), on the same JSONL corpus of ``--mb`` MB: the PDNC
   novels' chapters (real text, ~11.7 MB) plus documents of words drawn from PDNC's word
   frequencies up to the size. Throughput in MB of text per minute of wall time and of CPU
   time (user + system of the process tree: what a busy machine distorts least), peak memory
   (max RSS of the largest process, ``/usr/bin/time``: for several processes at once the
   total is higher), and the two indexes compared byte for byte.
2. **Tracing** 256-word generations (PDNC passages copied, copied with a word changed every
   ~12 words, and drawn text) on that index: median ms per generation for SimpleTrace (all
   four steps, numpy engine) against a naive loop doing one ``find`` per start position (every
   byte, the query running to the generation's end, then the common prefix with the
   neighbouring suffixes: step 1 alone).
3. **Query latency**: median microseconds of count (20-byte substrings), find + document
   window, and the longest-prefix primitive, numpy engine against the infini-gram engine.

    nice -n 19 .venv/bin/python benchmarks/bench_trace.py [--mb 100] [--generations 30]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

from recitation.trace.index import CorpusIndex, open_index
from recitation.trace.simpletrace import SimpleTrace
from recitation.trace.sources import iter_corpus

DATA = Path(os.environ.get("RECITATION_DATA", Path(__file__).resolve().parents[2] / "shared"
                           / "data"))


def make_corpus(out: Path, mb: float, seed: int = 0) -> tuple[int, list[str]]:
    """JSONL of PDNC chapters plus drawn documents; (bytes of text, the chapters)."""
    chapters = [d.text for d in iter_corpus(DATA / "pdnc", chapters=True)]
    words = Counter(w for c in chapters for w in re.findall(r"\S+", c))
    vocab, freq = list(words), np.array(list(words.values()), dtype=np.float64)
    cdf = np.cumsum(freq) / freq.sum()
    rng = np.random.default_rng(seed)
    total = 0
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for i, text in enumerate(chapters):
            f.write(json.dumps({"text": text, "id": f"pdnc-{i}", "source": "pdnc"}) + "\n")
            total += len(text.encode())
        i = 0
        while total < mb * 1e6:
            ids = np.searchsorted(cdf, rng.random(int(rng.integers(200, 3000))))
            text = " ".join(vocab[j] for j in ids)
            f.write(json.dumps({"text": text, "id": f"drawn-{i}", "source": "drawn"}) + "\n")
            total += len(text.encode())
            i += 1
    return total, chapters


def timed(cmd: list[str]) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MB of the largest process) of a command and its
    children. CPU seconds are what a busy machine distorts least."""
    t0 = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", *cmd], capture_output=True,
                       text=True)
    secs = time.perf_counter() - t0
    if r.returncode:
        sys.exit(f"{cmd[:4]} failed: {r.stderr[-2000:]}")
    rss, user, system = r.stderr.strip().splitlines()[-1].split()
    return secs, float(user) + float(system), int(rss) / 1024


def bench_build(work: Path, text_bytes: int, infinigram: bool = True) -> dict[str, object]:
    ours, theirs = work / "ours", work / "theirs"
    cli = str(Path(sys.executable).parent / "recitation")
    s_ours, c_ours, m_ours = timed([cli, "index", "build", str(work / "data"), str(ours),
                            "--workers", "1", "--overwrite"])
    s_par, c_par, m_par = timed([cli, "index", "build", str(work / "data"), str(work / "par"),
                          "--workers", "2", "--overwrite"])
    mb = text_bytes / 1e6
    out: dict[str, object] = {
        "corpus_mb": round(mb, 1), "ours_s": round(s_ours, 2), "ours_cpu_s": round(c_ours, 2),
        "ours_mb_per_cpu_min": round(mb / c_ours * 60),
        "ours_2_workers_cpu_s": round(c_par, 2),
        "ours_mb_per_min": round(mb / s_ours * 60), "ours_peak_mb": round(m_ours),
        "ours_2_workers_s": round(s_par, 2), "ours_2_workers_mb_per_min": round(mb / s_par * 60),
        "ours_2_workers_peak_mb": round(m_par)}
    if not infinigram:
        return out
    shutil.rmtree(theirs, ignore_errors=True)
    s_ig, c_ig, m_ig = timed([sys.executable, "-m", "infini_gram.indexing", "--data_dir",
                        str(work / "data"), "--save_dir", str(theirs), "--token_dtype", "u8",
                        "--cpus", "2", "--mem", "8", "--ulimit", "1024", "--add_metadata",
                        "--add_unigram"])
    same = all((ours / f"{n}.0").read_bytes() == (theirs / f"{n}.0").read_bytes()
               for n in ("tokenized", "table", "offset", "metadata", "metaoff", "unigram"))
    return {**out, "infinigram_s": round(s_ig, 2), "infinigram_cpu_s": round(c_ig, 2),
            "cpu_ratio": round(c_ig / c_ours, 1),
            "infinigram_mb_per_min": round(mb / s_ig * 60), "infinigram_peak_mb": round(m_ig),
            "speedup": round(s_ig / s_ours, 1), "speedup_2_workers": round(s_ig / s_par, 1),
            "identical_files": same}


def generations(chapters: list[str], n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    long = [c.split() for c in chapters if len(c.split()) > 600]
    out = []
    for i in range(n):
        words = rng.choice(long)
        a = rng.randrange(len(words) - 256)
        g = words[a:a + 256]
        if i % 3 == 1:
            g = [("xyzzy" if k % 12 == 11 else w) for k, w in enumerate(g)]
        elif i % 3 == 2:
            g = [rng.choice(rng.choice(long)) for _ in range(256)]
        out.append(" ".join(g))
    return out


def naive_spans(index: CorpusIndex, text: str) -> list[int]:
    ids = index.ids(text)
    return [index.engine.longest_prefix(ids[i:]) for i in range(len(ids))]


def bench_trace(index: CorpusIndex, gens: list[str]) -> dict[str, object]:
    st = SimpleTrace(index)
    ours, naive = [], []
    for g in gens:
        t0 = time.perf_counter()
        st.trace(g)
        ours.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        naive_spans(index, g)
        naive.append((time.perf_counter() - t0) * 1e3)
    mo, mn = statistics.median(ours), statistics.median(naive)
    return {"generations": len(gens), "simpletrace_median_ms": round(mo, 1),
            "naive_median_ms": round(mn, 1), "speedup": round(mn / mo, 1)}


def bench_queries(work: Path, chapters: list[str], n: int = 300) -> dict[str, object]:
    rng = random.Random(2)
    queries = []
    for _ in range(n):
        c = rng.choice([c for c in chapters if len(c) > 100]).encode()
        a = rng.randrange(len(c) - 40)
        queries.append(list(c[a:a + 20]))
    out: dict[str, object] = {}
    for name in ("numpy", "infini-gram"):
        e = open_index(work / "ours", engine=name).engine  # type: ignore[arg-type]
        for op in ("count", "find+doc", "longest_prefix"):
            times = []
            for q in queries:
                t0 = time.perf_counter()
                if op == "count":
                    e.count(q)
                elif op == "find+doc":
                    r = e.find(q)
                    s = next(i for i, (lo, hi) in enumerate(r.segments) if hi > lo)
                    e.doc_by_rank(s, r.segments[s][0], len(q), 50)
                else:
                    e.longest_prefix(q + [0x7e] * 20)
                times.append((time.perf_counter() - t0) * 1e6)
            out[f"{name} {op} median_us"] = round(statistics.median(times), 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--generations", type=int, default=30)
    ap.add_argument("--skip-infinigram-build", action="store_true")
    ap.add_argument("--keep", type=Path, default=None, help="work directory to keep")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-trace-"))
    (work / "data").mkdir(parents=True, exist_ok=True)
    try:
        text_bytes, chapters = make_corpus(work / "data", args.mb)
        result = {"machine": f"{platform.processor() or platform.machine()}, "
                  f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}",
                  "build": bench_build(work, text_bytes, not args.skip_infinigram_build)}
        index = open_index(work / "ours", engine="numpy")
        result["trace"] = bench_trace(index, generations(chapters, args.generations))
        result["queries"] = bench_queries(work, chapters)
        print(json.dumps(result, indent=2))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
