"""The dataset-inference section: built from the detect run's stored scores, shown in every
report format, and its features exactly the detectors that scored every passage."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from recitation.records import DetectRecord, ScoreRecord


def _rec(sid: str, label: str, **scores: float) -> DetectRecord:
    return DetectRecord(sample={"id": sid, "label": label, "text": sid},
                        scores=[ScoreRecord(sample_id=sid, detector=d, score=v,
                                            higher_means_member=d != "loss")
                                for d, v in scores.items()])


def test_features_are_the_detectors_that_scored_every_passage() -> None:
    from recitation.report.inference import _features

    recs = [_rec("m1", "member", loss=1.0, min_k=-2.0, pearl=0.5),
            _rec("m2", "member", loss=2.0, min_k=-3.0),
            _rec("c1", "control", loss=3.0, min_k=-4.0, pearl=0.1)]
    text, controls, names = _features(recs)
    assert names == ["loss", "min_k"]  # PEARL missed m2
    assert text.tolist() == [[-1.0, -2.0], [-2.0, -3.0]]  # loss oriented (lower = member)
    assert controls.tolist() == [[-3.0, -4.0]]


def test_an_audit_with_controls_reports_dataset_inference_everywhere(tmp_path: Path) -> None:
    """Scripted models score long words as unlikely: text of long words against controls of
    short ones separates on every feature, so the p is small; the three formats show it,
    with the blind baseline's warning (the assumption of one distribution fails here)."""
    from recitation.audit.run import AuditSettings, create_audit, execute_audit
    from recitation.cli import main
    from recitation.metrics.dataset_inference import dataset_inference
    from recitation.report.inference import _features
    from recitation.runs.audits import load_manifest
    from recitation.runs.store import RunStore

    def passages(path: Path, word: str, n: int) -> Path:
        path.write_text("".join(json.dumps({"id": f"{word}{i}", "text": " ".join(
            f"{word}{(i + j) % 7}" for j in range(30))}) + "\n" for i in range(n)),
            encoding="utf-8")
        return path

    text = passages(tmp_path / "t.jsonl", "extraordinarily", 12)
    ctl = passages(tmp_path / "c.jsonl", "ab", 12)
    s = AuditSettings(passage_words=30, pearl=False, cache=False, n_bootstrap=0,
                      recap_passages=0, passages=0, controls=0)
    folder = create_audit([str(text)], ["scripted:echo"], [str(ctl)], s,
                          runs_dir=tmp_path / "runs")
    execute_audit(folder, say=lambda _: None)
    assert main(["report", str(folder)]) == 0
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    di = report["sections"]["dataset_inference"]["scripted:echo"]
    run = folder / "runs" / load_manifest(folder)["models"][0]["runs"]["detect"]
    with RunStore(run) as store:
        recs = [DetectRecord.model_validate(r) for _, r in store.results("detect")]
    t, c, names = _features(recs)
    assert di["p_value"] == dataset_inference(t, c, names, seed=0).p_value < 1e-3
    assert di["features"] == len(names) >= 4 and np.isfinite(di["t"])
    # the two sets share no word: a bag of words alone separates them, and the section says so
    assert any("blind baseline" in w and "the controls differ from the text" in w
               for w in di["warnings"]), di["warnings"]
    md = (folder / "report.md").read_text(encoding="utf-8")
    assert "## Dataset inference" in md and f"p = {di['p_value']:.3g}" in md
    assert "Dataset inference: scripted:echo" in (folder / "report.html").read_text(
        encoding="utf-8")
