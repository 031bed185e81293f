"""`recitation demo` end to end on the real models, twice: a small audit with a positive
control (the embedded model and the quick organism on the organism's training passages,
against its held-out passages). The organism is found to reproduce its passages, the
embedded model is not, no control is reproduced; the second run is answered from the
response cache: the same audit from its YAML config, `recitation run demo-audit.yaml`. (The
full demo's wall time is measured in docs/report.md.)"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.model, pytest.mark.slow]


def test_demo_twice_second_from_cache(demo_audit: tuple[Path, str], shared_data: Path,
                                      recitation_runner: Callable[..., str]) -> None:
    work, first = demo_audit  # the session's demo (conftest.py), the report tests read it too
    assert "Audit verdict" in first
    # the console's verdict, a model at a time, a number a line (report/table.py)
    row = {m: re.search(rf"^{re.escape(m)}\n  verdict: (.+?)\n(?:.*\n)*?"
                        rf"  text reproduced: (\d+)/4\n  controls reproduced: (\d+)/4$",
                        first, re.M) for m in ("smollm2", "organism:quick:epoch2")}
    assert all(row.values()), first
    base, org = row["smollm2"], row["organism:quick:epoch2"]
    assert org is not None and base is not None
    assert org.group(1).startswith("memorized") and int(org.group(2)) >= 2
    assert not base.group(1).startswith("memorized") and base.group(2) == "0"
    assert org.group(3) == "0" and base.group(3) == "0"  # no control reproduced
    html = Path(re.search(r"report: (\S+report\.html)", first).group(1))  # type: ignore[union-attr]
    assert html.exists() and "<script>" in html.read_text(encoding="utf-8")[:5000]
    findings = json.loads(html.with_suffix(".json").read_text(encoding="utf-8"))
    assert [m["spec"] for m in findings["models"]] == ["smollm2", "organism:quick:epoch2"]
    for m in findings["models"]:  # ReCaLL and DC-PDD run on a white-box model, reported
        det = m["detection"]
        assert det["reported"] == ["recall", "dcpdd"] and "recall" not in det["primary"]
        assert det["detectors"]["dcpdd"]["n"] == 4 and len(
            det["detectors"]["dcpdd"]["control_scores"]) == 4
        # ReCaLL's prefix took 3 of the 4 controls, which it does not score
        assert det["detectors"]["recall"]["n"] == 4 and len(
            det["detectors"]["recall"]["control_scores"]) == 1
    made = re.findall(r"backend calls (\d+), from cache (\d+)", first)
    # each of the 8 runs asked its model; the session's response cache (conftest.py) answers
    # what an earlier run of the suite (or the benchmark before it) asked already
    assert len(made) == 8 and all(int(b) + int(c) > 0 for b, c in made), first

    # the same demo again, from the packaged demo config (recitation/data/demo-audit.yaml)
    # at the test's sizes: `recitation run` of a YAML audit, answered from the cache
    cfg = yaml.safe_load(Path(str(files("recitation") / "data" / "demo-audit.yaml"))
                         .read_text(encoding="utf-8"))
    cfg["params"] |= {"passages": 4, "controls": 4, "recap_passages": 1}
    (work / "demo.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    second = recitation_runner(shared_data, "run", str(work / "demo.yaml"), "--runs-dir",
                            str(work / "runs"))
    calls = re.findall(r"backend calls (\d+), from cache (\d+)", second)
    # per model: prefix probing, RECAP on text and on controls, detect
    assert len(calls) == 8 and all(b == "0" and int(c) > 0 for b, c in calls), second
    recap = findings["models"][1]["recap"]["groups"]
    assert recap["text"]["final"]["n"] == 1 and len(recap["text"]["rounds"]) == 3
    assert second.split("Audit verdict")[1].split("report:")[0] == \
        first.split("Audit verdict")[1].split("report:")[0]  # the same verdicts
