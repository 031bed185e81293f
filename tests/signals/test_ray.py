"""Token signals on a real Ray cluster: a head node started by the test on 127.0.0.1 only
(checked: every port its processes listen on), with its own temporary folder, stopped alone
(its own processes, never `ray stop`, which ends every Ray process on the machine).
`recitation signals --ray ADDRESS` gives the in-process path's store, number for number, and
a job whose shard went missing (killed before writing it) scores that shard alone; `--ray`
alone runs a cluster of its own. On a head declaring two GPUs this machine lacks, the actors
ask for one each, see it in CUDA_VISIBLE_DEVICES, and fall back to the CPU saying why
(device auto) or fail with the fix (device cuda)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.model,
              # three cluster runs in one test took 894 s beside a benchmark on 2 cores
              # (2026-11-29) and hit the 900 s default: not a timing test
              pytest.mark.timeout(2700)]

ray = pytest.importorskip("ray")
pq = pytest.importorskip("pyarrow.parquet")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cluster_processes(temp: Path) -> list[object]:
    """The head's processes: those naming its temporary folder, and their children."""
    import psutil

    roots = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if p.pid != os.getpid() and any(str(temp) in a for a in p.info["cmdline"] or ()):
                roots.append(p)
        except psutil.Error:
            continue
    found = {p.pid: p for p in roots}
    for p in roots:
        try:
            found |= {c.pid: c for c in p.children(recursive=True)}
        except psutil.Error:
            continue
    return list(found.values())


def _listening(procs: list[object]) -> list[str]:
    import psutil

    out = []
    for p in procs:
        try:
            conns = p.net_connections(kind="inet")  # type: ignore[attr-defined]
        except psutil.Error:
            continue
        out += [c.laddr.ip for c in conns if c.status == psutil.CONN_LISTEN]
    return out


@contextmanager
def _head(*resources: str) -> Iterator[tuple[str, Path]]:
    """A Ray head node on 127.0.0.1 (a short temporary folder: Ray's socket paths must fit
    108 bytes) declaring ``resources``; yields its address and folder; stops its own
    processes at the end."""
    temp = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))
    port = _free_port()
    env = dict(os.environ, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RECITATION_THREADS="1")
    ray_bin = Path(sys.executable).parent / "ray"
    subprocess.run([str(ray_bin), "start", "--head", "--node-ip-address=127.0.0.1",
                    f"--port={port}", f"--temp-dir={temp}", *resources,
                    "--include-dashboard=false", "--disable-usage-stats"],
                   env=env, check=True, capture_output=True, timeout=300)
    try:
        yield f"127.0.0.1:{port}", temp
    finally:
        import psutil

        procs = _cluster_processes(temp)
        for p in procs:
            try:
                p.send_signal(signal.SIGTERM)  # type: ignore[attr-defined]
            except psutil.Error:
                pass
        _, alive = psutil.wait_procs(procs, timeout=5)  # type: ignore[arg-type]
        for p in alive:
            p.kill()
        shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture(scope="module")
def head() -> Iterator[tuple[str, Path]]:
    with _head("--num-cpus=2") as found:
        yield found


@pytest.fixture(scope="module")
def gpu_head() -> Iterator[tuple[str, Path]]:
    """A head declaring two GPUs this machine does not have (Ray takes the count as given)."""
    with _head("--num-cpus=2", "--num-gpus=2") as found:
        yield found


def _run_signals(store: Path, texts: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")
    return subprocess.run([sys.executable, "-m", "recitation.cli", "signals", str(texts),
                           "--model", "smollm2", "--store", str(store), "--shard", "4",
                           *extra], env=env, capture_output=True, text=True, timeout=1200)


def _signals(store: Path, texts: Path, *extra: str) -> str:
    p = _run_signals(store, texts, *extra)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def _texts(path: Path) -> Path:
    """Fourteen short texts (four shards of four)."""
    import json

    words = "the sea was calm and the birds were quiet over the water at first light".split()
    path.write_text("".join(json.dumps({"id": str(k), "text": " ".join(
        words[(k + i) % len(words)] for i in range(20 + k))}) + "\n" for k in range(14)))
    return path


def _rows(store: Path) -> dict[str, dict[str, object]]:
    return {r["text_sha256"]: r for path in store.glob("*/*.parquet")
            for r in pq.read_table(path).to_pylist()}


def test_signals_on_a_ray_cluster_equal_the_in_process_store_and_resume_by_shard(
        head: tuple[str, Path], tmp_path: Path) -> None:
    address, temp = head
    procs = _cluster_processes(temp)
    ips = _listening(procs)
    assert procs and ips and set(ips) <= {"127.0.0.1", "::ffff:127.0.0.1"}, ips
    texts = _texts(tmp_path / "t.jsonl")
    out = _signals(tmp_path / "ray", texts, "--ray", address, "--workers", "2")
    assert "14 texts: 14 scored in 4 shard(s)" in out
    assert "14 texts: 14 scored in 4 shard(s)" in _signals(tmp_path / "here", texts)
    on_ray, here = _rows(tmp_path / "ray"), _rows(tmp_path / "here")
    assert on_ray.keys() == here.keys() and len(here) == 14
    assert on_ray == here  # every column, every number
    names = sorted(p.name for p in (tmp_path / "ray").glob("*/*.parquet"))
    assert names == sorted(p.name for p in (tmp_path / "here").glob("*/*.parquet"))
    (tmp_path / "ray").glob("*/*.parquet").__next__().unlink()  # killed before this shard
    out = _signals(tmp_path / "ray", texts, "--ray", address)
    assert "scored in 1 shard(s)" in out and _rows(tmp_path / "ray") == here
    # `--ray` with no address: a cluster of the command's own, gone when it ends
    assert "14 scored in 4 shard(s)" in _signals(tmp_path / "own", texts, "--ray")
    assert _rows(tmp_path / "own") == here


def _detect(tmp_path: Path, name: str, *extra: str) -> tuple[str, list[dict[str, object]]]:
    """`recitation detect` (white-box) on three members and three controls; its stdout and
    its stored records."""
    import json

    from recitation.runs.store import RunStore

    rows = {"m": ["The Sea Was Calm at First Light", "Birds Flew Over the Harbour Wall",
                  "A Lantern Burned in the Keeper's Window"],
            "c": ["The Mill Stood Silent Through the Winter", "Snow Lay on the Upper Fields",
                  "A Cart Rolled Slowly Down to the Ford"]}
    for k, texts in rows.items():
        (tmp_path / f"{k}.jsonl").write_text("".join(json.dumps({"text": t}) + "\n"
                                                     for t in texts))
    runs = tmp_path / f"runs-{name}"
    env = dict(os.environ, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")
    p = subprocess.run([sys.executable, "-m", "recitation.cli", "detect", "--model", "smollm2",
                        "--members", str(tmp_path / "m.jsonl"), "--controls",
                        str(tmp_path / "c.jsonl"), "--detectors", "whitebox", "--no-cache",
                        "--runs-dir", str(runs), *extra],
                       env=env, capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stdout + p.stderr
    (run_dir,) = [d for d in runs.iterdir() if d.is_dir()]
    with RunStore(run_dir) as store:
        return p.stdout, [r for _, r in store.results("detect")]


def test_detect_fills_its_store_on_ray_and_scores_as_in_process(
        head: tuple[str, Path], tmp_path: Path) -> None:
    """`detect --signals DIR --ray ADDRESS`: the six texts and their lower-cased forms are
    scored on the cluster into the store first, and the run's scores are those of a run that
    scores in process (within 1e-5 relative: other batches, or another thread count where
    RECITATION_THREADS is unset outside the two-worker suite, sum float32 in another order;
    seen 8.6e-6 on a loss of 9.35 with one thread against two on a 2-core Intel Xeon)."""
    address, _ = head
    out, on_ray = _detect(tmp_path, "ray", "--signals", str(tmp_path / "store"),
                          "--ray", address, "--workers", "1")
    assert "Ray: 12 of 12 texts scored" in out, out
    assert len(_rows(tmp_path / "store")) == 12
    _, here = _detect(tmp_path, "here")
    a = {(s["sample_id"], s["detector"]): s["score"] for r in on_ray for s in r["scores"]}
    b = {(s["sample_id"], s["detector"]): s["score"] for r in here for s in r["scores"]}
    assert a.keys() == b.keys() and len(a) > 50
    assert all(a[k] == pytest.approx(b[k], rel=1e-5, abs=1e-6) for k in a)


def test_actors_take_the_gpus_a_cluster_declares_and_fall_back_or_fail_without_cuda(
        gpu_head: tuple[str, Path], tmp_path: Path) -> None:
    """Under auto each actor asks for one of the two declared GPUs (three workers asked
    for, so the GPUs bound them), is given it in CUDA_VISIBLE_DEVICES, finds that torch sees
    no CUDA device and scores on the CPU: the driver logs why, and the store is the
    in-process one. Under cuda the run fails, naming the GPU, the reason and the fix."""
    address, _ = gpu_head
    texts = _texts(tmp_path / "t.jsonl")
    p = _run_signals(tmp_path / "ray", texts, "--ray", address, "--workers", "3")
    assert p.returncode == 0, p.stdout + p.stderr
    placed = re.findall(r"on Ray: (\d+) shard\(s\) on (\S+) \(CUDA_VISIBLE_DEVICES=(\S+)\)",
                        p.stdout)
    assert placed, p.stdout
    assert {device for _, device, _ in placed} == {"cpu"}
    assert {gpu for *_, gpu in placed} <= {"0", "1"}  # one GPU each, one of the two
    assert sum(int(n) for n, *_ in placed) == 4
    err = " ".join((p.stdout + p.stderr).split())
    assert "shard(s) scored on the CPU, not a GPU: a Ray worker given GPU" in err, err
    assert "sees no CUDA device" in err
    _signals(tmp_path / "here", texts)
    on_ray = _rows(tmp_path / "ray")
    assert on_ray == _rows(tmp_path / "here") and len(on_ray) == 14
    failed = _run_signals(tmp_path / "cuda", texts, "--ray", address, "--device", "cuda")
    err = " ".join((failed.stdout + failed.stderr).split())  # rich wraps long lines
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert re.search(r"error: a Ray worker given GPU '[01]' \(CUDA_VISIBLE_DEVICES\) on \S+ "
                     r"cannot use it: device 'cuda': torch .* sees no CUDA device; use "
                     r"--device cpu", err), err
    assert not list((tmp_path / "cuda").glob("*/*.parquet"))
