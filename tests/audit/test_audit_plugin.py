"""A made-up detector family added as a plug-in: one module (in a temporary package) and one
registry line, and nothing else edited. It must appear in ``recitation methods``, run in
``detect``, be planned into an audit's detect run, count in the verdict, and show in the
three report formats and in ``compare`` (control flow on the scripted model; the real-model
audit with ReCaLL and DC-PDD is tests/test_demo_cli.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from recitation import methods
from recitation.audit.run import AuditSettings, create_audit, execute_audit
from recitation.cli import main
from recitation.runs.audits import load_manifest
from recitation.runs.store import RunStore

PLUGIN = '''
"""Share of words that start with the letter t: a made-up detector for a test."""
from recitation.detect.scoring import DetectorScore, SampleResult
from recitation.methods import Access, AuditUse, Calls, MethodInfo


class TeeDetector:
    family = "tee"

    def companion_texts(self, ctx, samples):
        return []

    async def score(self, ctx, samples, plain, companions, model):
        def share(text):
            words = text.split()
            return sum(w.startswith("t") for w in words) / len(words)
        return {s.id: SampleResult([DetectorScore(s.id, "tee_share", share(s.text), True)])
                for s in samples}


TEE = MethodInfo(
    name="tee", kind="detector", title="tee share", paper="Nobody et al. 2099",
    access=frozenset({Access.LOGPROBS}), writes=("tee_share",),
    calls=lambda p: Calls(score=frozenset({"text"})), calls_formula="1 score (shared)",
    job="detect", family="tee", summary="share of words starting with t",
    runner="teeplug:TeeDetector",
    audit=AuditUse(run="detect", order=45, primary=("tee_share",)))
'''


@pytest.fixture
def tee(write_plugin: Callable[[str, str], None], monkeypatch: pytest.MonkeyPatch) -> None:
    write_plugin("teeplug", PLUGIN)
    import recitation.detect.job  # noqa: F401  (its DETECTORS constant: the registry without tee)

    # the one registry line
    monkeypatch.setitem(methods.METHODS, "tee", methods.Entry("detector", "tee", "teeplug:TEE"))


def _passages(path: Path, stem: str, n: int) -> Path:
    path.write_text("".join(json.dumps({"id": f"{stem}{i}", "text": " ".join(
        f"{stem}{i}w{j}" for j in range(30))}) + "\n" for i in range(n)), encoding="utf-8")
    return path


def test_a_made_up_detector_reaches_every_command_and_report(
        tee: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = _passages(tmp_path / "text.jsonl", "t", 6)  # every word starts with t
    ctl = _passages(tmp_path / "ctl.jsonl", "c", 12)  # none does
    assert main(["methods", "--json"]) == 0
    listed = {m["name"]: m for m in json.loads(capsys.readouterr().out)}
    assert listed["tee"]["audit"] == "yes; verdict: tee_share"

    runs = tmp_path / "runs"
    assert main(["detect", "--model", "scripted:echo", "--members", str(text), "--controls",
                 str(ctl), "--detectors", "tee", "--runs-dir", str(runs), "--no-cache",
                 "--bootstrap", "0"]) == 0
    (run,) = runs.iterdir()
    with RunStore(run) as s:
        scores = [sc for _, r in s.results("detect") for sc in r["scores"]]
    assert {sc["detector"] for sc in scores} == {"tee_share"} and len(scores) == 18

    settings = AuditSettings(passage_words=30, pearl=False, cache=False, n_bootstrap=0,
                             recap_passages=0)
    folder = create_audit([str(text)], ["scripted:echo"], [str(ctl)], settings,
                          runs_dir=tmp_path / "audits")
    entry = load_manifest(folder)["models"][0]
    assert entry["methods"] == ["prefix_probe", "whitebox", "tee", "recall"]
    execute_audit(folder, say=lambda _: None)
    with RunStore(folder / "runs" / entry["runs"]["detect"]) as s:
        assert s.get_meta("config")["params"]["detectors"] == ["whitebox", "tee", "recall"]
    assert main(["report", str(folder)]) == 0
    (m,) = json.loads((folder / "report.json").read_text(encoding="utf-8"))["models"]
    det = m["detection"]
    assert det["primary"] == ["min_k_20", "tee_share"] and det["reported"] == ["recall"]
    tee_det = det["detectors"]["tee_share"]
    assert tee_det["flagged"] == 6 and "tee_share" in m["verdict"]["significant"]  # all 6
    assert any(r.startswith("tee_share: 6 of 6") for r in m["verdict"]["reasons"])
    assert m["verdict"]["level"] == "medium"  # detectors, no verbatim reproduction
    assert "| tee_share | yes | 6/6" in (folder / "report.md").read_text(encoding="utf-8")
    html = (folder / "report.html").read_text(encoding="utf-8")
    assert "<tr><td>tee_share</td><td>yes</td>" in html
    assert "<tr><td>recall</td><td>reported</td>" in html

    out = tmp_path / "cmp"
    assert main(["compare", str(folder), "--out", str(out)]) == 0
    (row,) = json.loads((out / "compare.json").read_text(encoding="utf-8"))["rows"]
    assert "tee_share 1," in row[-1] and "recall 0.5 (reported)" in row[-1]


def test_a_family_without_an_audit_use_is_not_audited(
        tee: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The declaration is what puts a family in an audit: without it, ``tee`` still runs in
    ``detect`` but an audit leaves it out (and a declaration naming no audit setting is
    refused by name)."""
    from dataclasses import replace

    from recitation.audit.run import plan_methods
    from recitation.errors import ConfigError

    assert "tee" in plan_methods("scripted:x", AuditSettings(), 12)[0]
    import teeplug  # type: ignore[import-not-found]

    monkeypatch.setattr(teeplug, "TEE", replace(teeplug.TEE, audit=None))
    chosen, skipped = plan_methods("scripted:x", AuditSettings(), 12)
    assert "tee" not in chosen and "tee" not in skipped
    bad = methods.AuditUse(run="detect", order=45, off="no_such_setting")
    monkeypatch.setattr(teeplug, "TEE", replace(teeplug.TEE, audit=bad))
    with pytest.raises(ConfigError, match="'no_such_setting', which is no audit setting"):
        plan_methods("scripted:x", AuditSettings(), 12)


def test_a_family_declares_one_audit_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two methods of one family that disagree on how an audit uses it are refused."""
    from dataclasses import replace

    from recitation.detect import whitebox
    from recitation.errors import ConfigError

    families = methods.audit_families()  # whatever is registered: ordered, one use each
    assert [f.use.order for f in families] == sorted(f.use.order for f in families)
    assert len({f.family for f in families}) == len(families) and "whitebox" in {
        f.family for f in families}
    loss = whitebox.METHODS["loss"]
    assert loss.audit is not None
    monkeypatch.setitem(whitebox.METHODS, "loss",
                        replace(loss, audit=replace(loss.audit, verdict=False)))
    with pytest.raises(ConfigError, match="family 'whitebox' declare different audit uses"):
        methods.audit_families()
