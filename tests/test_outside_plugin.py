"""An outside plug-in package (tests/plugin_package: a detector family with typed options, a
backend and a report section, declared as entry points in its pyproject.toml) installed with
``pip install --target`` into a temporary folder, and nothing of recitation edited: it is
listed by ``recitation methods``, run by ``detect`` and ``audit`` with its options, shown in
the report, and its mistakes are named (the option key, the keys it has, the package)."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from recitation import methods, registry
from recitation.cli import main
from recitation.errors import ConfigError
from recitation.models.config import BACKENDS, backend_names
from recitation.report import sections
from recitation.runs.store import RunStore

PACKAGE = Path(__file__).resolve().parent / "plugin_package"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plug-in installed (its wheel built here, no network) into a folder of its own;
    where pip cannot build it (no setuptools in the environment), installed as pip would:
    its package and a .dist-info with the entry points of its pyproject.toml."""
    src = tmp_path_factory.mktemp("src") / "shoutplug"
    shutil.copytree(PACKAGE, src)  # the build writes beside the sources: not in tests/
    target = tmp_path_factory.mktemp("site")
    built = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                            "--no-index", "--no-build-isolation", "--target", str(target),
                            str(src)], capture_output=True, text=True)
    if built.returncode != 0:
        _install_by_hand(src, target)
    assert (target / "shoutplug-0.1.0.dist-info" / "entry_points.txt").is_file()
    return target


def _install_by_hand(src: Path, target: Path) -> None:
    import tomllib

    project = tomllib.loads((src / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    shutil.copytree(src / "shoutplug", target / "shoutplug")
    info = target / f"{project['name']}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\n"
                                   f"Version: {project['version']}\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n"
        for group, eps in project["entry-points"].items()), encoding="utf-8")


def test_installing_by_hand_is_what_pip_does(tmp_path: Path) -> None:
    _install_by_hand(PACKAGE, tmp_path)
    eps = (tmp_path / "shoutplug-0.1.0.dist-info" / "entry_points.txt").read_text()
    assert "[recitation.methods]\nshout = shoutplug.detector:SHOUT\n" in eps
    assert (tmp_path / "shoutplug" / "detector.py").is_file()


def _forget(prefix: str) -> None:
    for name in [m for m in sys.modules if m == prefix or m.startswith(prefix + ".")]:
        del sys.modules[name]


@pytest.fixture
def installed(site: Path) -> Iterator[Path]:
    """The folder on sys.path, as an installed package is (and off it afterwards)."""
    sys.path.insert(0, str(site))
    registry.refresh()
    try:
        yield site
    finally:
        sys.path.remove(str(site))
        registry.refresh()
        _forget("shoutplug")


def _passages(path: Path, stem: str, n: int) -> Path:
    path.write_text("".join(json.dumps({"id": f"{stem}{i}", "text": " ".join(
        f"{stem}{i}w{j}" for j in range(30))}) + "\n" for i in range(n)), encoding="utf-8")
    return path


def test_it_is_registered_from_its_entry_points(installed: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert "shout" in methods.families("detector") and "loud" in backend_names()
    assert [s.name for s in sections.sections()][-1] == "shout"
    plug = methods.origin("shout")
    assert plug is not None and plug.package == "shoutplug"
    assert methods.origin("loss") is None and BACKENDS.origin("local") is None
    assert main(["methods", "--json", "--kind", "detector"]) == 0
    shout = {m["name"]: m for m in json.loads(capsys.readouterr().out)}["shout"]
    assert shout["options"] == ["shout.letter", "shout.weight"]
    assert shout["package"] == "shoutplug" and shout["audit"] == "yes; verdict: shout_share"


def test_gone_when_not_installed(site: Path) -> None:
    registry.refresh()
    assert "shout" not in methods.names() and "loud" not in backend_names()


def test_detect_runs_it_with_its_options(installed: Path, tmp_path: Path) -> None:
    text, ctl = _passages(tmp_path / "t.jsonl", "t", 3), _passages(tmp_path / "c.jsonl", "c", 4)
    runs = tmp_path / "runs"
    assert main(["detect", "--model", "loud:echo", "--members", str(text), "--controls",
                 str(ctl), "--detectors", "shout", "--detector-option", "shout.letter=c",
                 "--detector-option", "shout.weight=2", "--runs-dir", str(runs),
                 "--no-cache", "--bootstrap", "0"]) == 0
    (run,) = runs.iterdir()
    with RunStore(run) as s:
        records = [r for _, r in s.results("detect")]
        params = s.get_meta("config")["params"]
    assert params["detector_options"] == {"shout": {"letter": "c", "weight": 2.0}}
    share = {r["sample"]["label"]: {sc["score"] for sc in r["scores"]
                                    if sc["detector"] == "shout_share"} for r in records}
    assert share == {"member": {0.0}, "control": {2.0}}  # every control word starts with c
    assert all(r["shout_letter"] == "c" and not r["errors"] for r in records)


@pytest.mark.parametrize(("option", "says"), [
    ("shout.colour=red", "has no option 'colour'; its options: letter, weight"),
    ("shout.weight=-1", "shout.weight: detector 'shout' (plug-in package 'shoutplug'): "
                        "Input should be greater than 0"),
    ("shout=3", "write FAMILY.key=value"),
    ("shot.weight=3", "unknown detector 'shot' (did you mean 'shout'?)"),
    ("recall.weight=3", "detector 'recall' is not run"),
])
def test_a_bad_option_is_named(installed: Path, tmp_path: Path, option: str, says: str,
                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["detect", "--model", "loud:echo", "--detectors", "shout", "--runs-dir",
                 str(tmp_path), "--detector-option", option, "--estimate-only"]) != 0
    err = capsys.readouterr().err
    assert says in err and "--detector-option" in err, err


def test_audit_and_report_show_it(installed: Path, tmp_path: Path) -> None:
    text, ctl = _passages(tmp_path / "t.jsonl", "t", 6), _passages(tmp_path / "c.jsonl", "c", 12)
    audits = tmp_path / "audits"
    assert main(["audit", "--text", str(text), "--controls", str(ctl), "--model", "loud:echo",
                 "--no-pearl", "--recap-passages", "0", "--passage-words", "30",
                 "--bootstrap", "0", "--no-cache", "--detector-option", "shout.weight=3",
                 "--runs-dir", str(audits), "--yes"]) == 0
    (folder,) = audits.iterdir()
    manifest = json.loads((folder / "audit.json").read_text(encoding="utf-8"))
    assert manifest["settings"]["detector_options"] == {"shout": {"letter": "t",
                                                                  "weight": 3.0}}
    (entry,) = manifest["models"]
    assert "shout" in entry["methods"]
    with RunStore(folder / "runs" / entry["runs"]["detect"]) as s:
        assert s.get_meta("config")["params"]["detector_options"]["shout"]["weight"] == 3.0
        shares = {sc["score"] for _, r in s.results("detect") for sc in r["scores"]
                  if sc["detector"] == "shout_share"}
    assert shares == {0.0, 3.0}  # the option took effect: text words all start with t
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    (m,) = report["models"]
    assert "shout_share" in m["detection"]["primary"]
    assert report["sections"]["shout"] == {"models": ["loud:echo"]}
    md = (folder / "report.md").read_text(encoding="utf-8")
    assert "## Shout words" in md and "shout_share" in md
    assert "Shouted at loud:echo" in (folder / "report.html").read_text(encoding="utf-8")
    out = tmp_path / "cmp"
    assert main(["compare", str(folder), "--out", str(out)]) == 0
    (row,) = json.loads((out / "compare.json").read_text(encoding="utf-8"))["rows"]
    assert "shout_share 1" in row[-1]


def _dist(root: Path, name: str, entry_points: str) -> None:
    info = root / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
                                   encoding="utf-8")
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")


@pytest.fixture
def on_path(tmp_path: Path) -> Iterator[Path]:
    sys.path.insert(0, str(tmp_path))
    registry.refresh()
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        registry.refresh()


def test_a_plugin_that_fails_to_load_is_named(on_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    _dist(on_path, "brokenplug", "[recitation.methods]\nbad = brokenplug_nowhere:X\n")
    with pytest.raises(ConfigError, match=r"plug-in 'brokenplug' \(recitation.methods: bad = "
                       r"brokenplug_nowhere:X\) cannot be loaded: ModuleNotFoundError"):
        methods.names()
    assert main(["methods"]) == 1  # every command says so, not a traceback
    assert "pip uninstall brokenplug" in capsys.readouterr().err


JOB = """
from pydantic import BaseModel

from recitation.runs.jobs import Job, Table, WorkItem


class Params(BaseModel):
    n: int = 2


class CountJob(Job):
    name = "count"
    description = "counts"
    Params = Params

    def items(self):
        return [WorkItem(str(i), {"i": i}) for i in range(self.params.n)]

    async def run_items(self, items, model):
        return [{"i": it.payload["i"]} for it in items]

    def summarize(self, records):
        return Table("count", ["i"], [[r["i"]] for _, r in records])
"""


def test_a_job_of_another_package(on_path: Path) -> None:
    from recitation.runs.jobs import make_job

    (on_path / "countplug.py").write_text(JOB, encoding="utf-8")
    _dist(on_path, "countplug", "[recitation.jobs]\ncount = countplug:CountJob\n")
    try:
        job = make_job("count", {"n": 3}, 0)
        assert [it.id for it in job.items()] == ["0", "1", "2"]
        with pytest.raises(ConfigError, match=r"unknown job 'cuont' \(did you mean 'count'"):
            make_job("cuont", {}, 0)
    finally:
        _forget("countplug")


def test_a_plugin_may_not_take_a_builtin_name(on_path: Path) -> None:
    _dist(on_path, "sneakyplug", "[recitation.backends]\nlocal = sneaky:Model\n")
    with pytest.raises(ConfigError, match="plug-in 'sneakyplug'.*takes the name 'local'"):
        backend_names()


def test_a_plugin_section_that_is_no_section_is_named(on_path: Path) -> None:
    (on_path / "notasection.py").write_text("SECTION = 42\n", encoding="utf-8")
    _dist(on_path, "notasection", "[recitation.sections]\nodd = notasection:SECTION\n")
    try:
        with pytest.raises(ConfigError, match="plug-in 'notasection'.*holds no Section"):
            sections.sections()
    finally:
        _forget("notasection")


@pytest.mark.model
@pytest.mark.slow
def test_detect_runs_it_on_the_embedded_model(site: Path, tmp_path: Path) -> None:
    """In a process of its own (PYTHONPATH: the installed plug-in), on the real local model:
    its log-probability score comes from the model, its share from its option."""
    text, ctl = _passages(tmp_path / "t.jsonl", "t", 2), _passages(tmp_path / "c.jsonl", "c", 3)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), *sys.path]))
    runs = tmp_path / "runs"
    out = subprocess.run(
        [sys.executable, "-m", "recitation.cli", "detect", "--model", "smollm2", "--device",
         "cpu", "--members", str(text), "--controls", str(ctl), "--detectors", "shout",
         "whitebox", "--detector-option", "shout.weight=0.5", "--runs-dir", str(runs),
         "--no-cache", "--bootstrap", "0"], env=env, capture_output=True, text=True,
        timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    (run,) = runs.iterdir()
    with RunStore(run) as s:
        records = [r for _, r in s.results("detect")]
    for r in records:
        got = {sc["detector"]: sc["score"] for sc in r["scores"]}
        assert got["shout_share"] == (0.5 if r["sample"]["label"] == "member" else 0.0)
        assert math.isfinite(got["shout_logprob"]) and got["shout_logprob"] < 0
        assert got["shout_logprob"] == pytest.approx(-got["loss"], rel=1e-6)  # the same scores


def test_bench_groundtruth_and_the_leaderboard_read_the_registry(installed: Path) -> None:
    from recitation.bench.groundtruth import GroundTruthConfig, unit_params, units
    from recitation.bench.lowfpr import access_level

    assert "shout" in units()
    cfg = GroundTruthConfig(organism="quick", units=("shout", "whitebox"))
    files = {"members": Path("m.jsonl"), "nonmembers": Path("n.jsonl")}
    job, params = unit_params("shout", cfg, files, 1, {}, 64)
    assert job == "detect" and params["detectors"] == ["shout"]
    assert access_level("shout_share") == "log-probabilities"  # from its metadata
