"""What the GPU check needs on a machine without a network, and how it gets there.

A GPU machine (docs/benchmarks.md, "GPU check") has python3 with :data:`GPU_MACHINE` but not
pydantic and the rest of recitation's dependencies. The scoring, detector and training code the
check runs imports only :data:`WHEELS` beyond those: ``gpu_check.sh --sandbox`` proves it here
(the check run by ``python -S`` over a folder holding only those packages, :func:`sandbox`;
tests/test_gpu_check.py). ``gpu_check.sh --prepare`` downloads the wheels here, pinned to the
versions of this environment, and ``gpu_check.sh`` installs them there from the folder
(:func:`install`), into a folder of their own that goes on ``PYTHONPATH`` with ``src``:
nothing is built, nothing is fetched, the machine's own packages stay as they are.

Standard library only at import: this runs before pydantic is there.

    python scripts/gpu_check_env.py pins               # NAME==VERSION of each wheel, from here
    python scripts/gpu_check_env.py tokenizer DIR      # the embedded model's tokenizer files
    python scripts/gpu_check_env.py install WHEELS DIR SRC # what is missing, from WHEELS
    python scripts/gpu_check_env.py sandbox DIR        # links to what a GPU machine has
"""

from __future__ import annotations

import importlib.metadata as metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

WHEELS = (
    ("pydantic", "pydantic"),
    ("pydantic-core", "pydantic_core"),
    ("annotated-types", "annotated_types"),
    ("typing-inspection", "typing_inspection"),
    ("typing-extensions", "typing_extensions"),
)
"""(distribution, import name) of what recitation's scoring path needs beyond
:data:`GPU_MACHINE`; pydantic-core is compiled, one wheel per Python version."""

GPU_MACHINE = ("torch", "transformers", "accelerate", "safetensors", "tokenizers", "numpy",
               "scipy", "pandas", "pyarrow", "rich", "jinja2", "httpx")
"""What a GPU machine's python3 has (issue 45), with whatever these require."""

ALWAYS_THERE = ("pip", "setuptools", "wheel")
"""Installer packages a Python environment has anyway (setuptools' ``_distutils_hack``)."""

PYTHONS = ("3.11", "3.12", "3.13")
"""Python versions whose compiled wheels ``--prepare`` brings (the GPU machine's is not
known ahead; 3.12 was seen there)."""


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins() -> list[str]:
    """``NAME==VERSION`` of each of :data:`WHEELS` as installed here."""
    return [f"{dist}=={metadata.version(dist)}" for dist, _ in WHEELS]


def _requirements(dist: str) -> list[str]:
    """The distributions ``dist`` requires unconditionally here (no extras; markers
    evaluated when ``packaging`` is there, else requirements with markers are skipped)."""
    try:
        reqs = metadata.requires(dist) or []
    except metadata.PackageNotFoundError:
        return []
    out = []
    for req in reqs:
        name, _, marker = req.partition(";")
        if "extra" in marker:
            continue
        if marker.strip() and not _marker_holds(marker):
            continue
        found = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", name)
        if found:
            out.append(_norm(found.group(1)))
    return out


def _marker_holds(marker: str) -> bool:
    try:
        from packaging.markers import Marker
    except ImportError:
        return False
    return bool(Marker(marker.strip()).evaluate())


def allowed_distributions() -> set[str]:
    """:data:`GPU_MACHINE` and everything it requires, :data:`WHEELS`, recitation and the
    installers: what the check may import."""
    todo = [_norm(d) for d in GPU_MACHINE]
    seen: set[str] = set()
    while todo:
        dist = todo.pop()
        if dist not in seen:
            seen.add(dist)
            todo.extend(_requirements(dist))
    return seen | {_norm(d) for d, _ in WHEELS} | {"recitation"} | set(ALWAYS_THERE)


def sandbox(dst: Path) -> Path:
    """A folder of links to this environment's packages of :func:`allowed_distributions`
    (recitation aside: it comes from ``src``), to run the check with ``python -S`` and
    ``PYTHONPATH=dst:src`` as a GPU machine would: an import of anything else fails."""
    allowed = allowed_distributions() - {"recitation"}
    dst.mkdir(parents=True, exist_ok=True)
    for dist in metadata.distributions():
        if _norm(dist.metadata["Name"]) not in allowed:
            continue
        for top in {f.parts[0] for f in dist.files or ()}:
            src = Path(str(dist.locate_file(top)))
            if top in ("..", "__pycache__") or top.endswith(".pth") or not src.exists():
                continue
            if not (dst / top).exists():
                (dst / top).symlink_to(src)
    return dst


def missing_here() -> list[str]:
    """The distributions of :data:`WHEELS` this python cannot import."""
    return [dist for dist, module in WHEELS if importlib.util.find_spec(module) is None]


def install(wheels: Path, target: Path, src: Path) -> None:
    """Install the missing :data:`WHEELS` from the folder ``wheels`` into ``target`` (no
    index, no dependencies resolved, nothing built). When recitation's modules (from
    ``src``) still do not import, the machine's own copies are too old (pydantic 2.14 needs
    typing-extensions 4.16): then every one of :data:`WHEELS` goes into ``target``, which
    comes first on ``PYTHONPATH``."""
    missing = missing_here()
    if not missing:
        return
    target.mkdir(parents=True, exist_ok=True)
    _put(wheels, target, missing)
    if _imports(target, src, quiet=True):
        return
    print("gpu_check: this python's own copies do not do; bringing every wheel", flush=True)
    _put(wheels, target, [dist for dist, _ in WHEELS])
    if not _imports(target, src, quiet=False):
        raise SystemExit(f"recitation does not import with the wheels of {wheels}")


def _put(wheels: Path, target: Path, dists: list[str]) -> None:
    """``dists``' wheels into ``target``: with pip where there is one, else by unpacking the
    wheel that fits this python (a wheel is a zip of the installed files)."""
    if importlib.util.find_spec("pip") is not None:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index",
                        "--no-deps", "--no-compile", "--upgrade", "--find-links", str(wheels),
                        "--target", str(target), *dists], check=True)
        return
    for dist in dists:
        _unpack(_fitting_wheel(wheels, dist), target)


CHECK_IMPORT = ("import recitation.models.local, recitation.detect.whitebox, "
                "recitation.organism.train")


def _imports(target: Path, src: Path, *, quiet: bool) -> bool:
    """Whether :data:`CHECK_IMPORT` works with ``target`` and ``src`` first on the path."""
    path = os.pathsep.join([str(target), str(src), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", CHECK_IMPORT], capture_output=quiet,
                          env={**os.environ, "PYTHONPATH": path}, check=False)
    return done.returncode == 0


def _fitting_wheel(wheels: Path, dist: str) -> Path:
    """The wheel of ``dist`` in ``wheels`` whose tags this python accepts."""
    from packaging.tags import sys_tags  # transformers requires packaging

    accepted = {str(t) for t in sys_tags()}
    stem = dist.replace("-", "_")
    for whl in sorted(wheels.glob(f"{stem}-*.whl")):
        pys, abis, plats = (part.split(".") for part in whl.stem.split("-")[-3:])
        if any(f"{p}-{a}-{q}" in accepted for p in pys for a in abis for q in plats):
            return whl
    raise FileNotFoundError(f"no wheel of {dist} for this python in {wheels}")


def _unpack(whl: Path, target: Path) -> None:
    with zipfile.ZipFile(whl) as z:
        z.extractall(target)


def export_tokenizer(dst: Path) -> Path:
    """The embedded model's tokenizer (SmolLM2's, from the GGUF converted under the model
    cache) written to ``dst``: the few MB of files that travel to the GPU machine."""
    import transformers

    from recitation.models.local import LocalModel

    src = LocalModel("smollm2", device="cpu").transformers_dir()
    tok = transformers.AutoTokenizer.from_pretrained(src, local_files_only=True)
    tmp = dst.with_name(dst.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tok.save_pretrained(tmp)
    shutil.rmtree(dst, ignore_errors=True)
    tmp.replace(dst)
    return dst


def main(argv: list[str]) -> int:
    if argv[:1] == ["pins"]:
        print("\n".join(pins()))
    elif argv[:1] == ["pythons"]:
        print(" ".join(PYTHONS))
    elif argv[:1] == ["missing"]:
        print(" ".join(missing_here()))
    elif argv[:1] == ["tokenizer"] and len(argv) == 2:
        print(export_tokenizer(Path(argv[1])))
    elif argv[:1] == ["sandbox"] and len(argv) == 2:
        print(sandbox(Path(argv[1])))
    elif argv[:1] == ["install"] and len(argv) == 4:
        install(Path(argv[1]), Path(argv[2]), Path(argv[3]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
