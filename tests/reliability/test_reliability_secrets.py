"""Secrets and safety: a recognizable fake API key, API-backed commands against a local
server (successes and errors whose replies echo the key), then every output is searched for
it: stdout, stderr (verbose logs), the run stores, the response cache, the audit's HTML /
Markdown / JSON report and every other file written. ``recitation serve`` refuses a
non-loopback address unless told."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from recitation.cli import main
from recitation.models.scripted import ScriptedModel
from recitation.serve import FaultAction, RequestInfo, start_server

SECRET = "sk-RECITATION-FAKE-KEY-7f3a9c1e5b2d4"
KEY_ENV = "RECITATION_TEST_SECRET_KEY"


def echo_key(info: RequestInfo) -> FaultAction | None:
    """Replies that quote the key back (as some misconfigured proxies do)."""
    text = json.dumps(info.body or {})
    if "Shem" in text:  # a 500 that echoes the key: retried, then recorded
        return FaultAction.json_body({"error": {"message": f"upstream said key {SECRET}"}}, 500)
    if "Ham" in text:  # a rejected key, echoed: not retried
        return FaultAction.json_body({"error": {"message": f"bad key {SECRET}"}}, 401)
    return None


def cli(args: list[str], env: dict[str, str]) -> str:
    p = subprocess.run([sys.executable, "-m", "recitation.cli", "-v", *args], env=env,
                       capture_output=True, text=True, timeout=600)
    return f"$ {' '.join(args)} -> {p.returncode}\n{p.stdout}\n{p.stderr}"


def exit_code(output: str) -> int:
    """The exit code that :func:`cli` wrote on the first line of ``output``."""
    m = re.match(r"\$ [^\n]* -> (-?\d+)\n", output)
    assert m is not None, output[:300]
    return int(m.group(1))


def shown(output: str) -> str:
    """A failure message: the command line with its exit code, then the output's end."""
    return output.split("\n", 1)[0] + "\n...\n" + output[-2500:]


def test_fake_key_never_leaves_the_request(tmp_path: Path) -> None:
    env = dict(os.environ, **{KEY_ENV: SECRET, "OPENAI_API_KEY": SECRET,
                              "RECITATION_CACHE_DIR": str(tmp_path / "cache"),
                              "RECITATION_RUNS_DIR": str(tmp_path / "runs")})
    corpus = tmp_path / "passages.jsonl"
    with corpus.open("w") as fh:  # KJV, Genesis 9-10 (public domain)
        for i, who in enumerate(["Noah", "Shem", "Ham", "Japheth"]):
            fh.write(json.dumps({"id": f"v{i}", "text": f"And {who} the son of Noah went "
                                 "forth of the ark and the earth was overspread"}) + "\n")
    outputs = []
    with start_server(ScriptedModel(name="scripted"), fault_hook=echo_key) as server:
        spec = f"openai:scripted@{server.url}"
        cfg = {"job": "prefix_probe", "cache": True,
               "model": {"backend": "openai", "model": "scripted", "base_url": server.url,
                         "api_key_env": KEY_ENV, "max_attempts": 2,
                         "retry_base_delay": 0.01},
               "params": {"source": "jsonl", "path": str(corpus), "max_new_tokens": 6}}
        (tmp_path / "run.yaml").write_text(yaml.safe_dump(cfg))
        runs = tmp_path / "runs"
        # v1 (Shem: HTTP 500, retried once, then failed) and v2 (Ham: HTTP 401, not retried)
        # fail; v0 and v3 are answered: the run ends "incomplete", exit code 4
        out = cli(["run", str(tmp_path / "run.yaml")], env)
        outputs.append(out)
        assert exit_code(out) == 4, shown(out)
        assert "status: incomplete items: 2/4" in " ".join(out.split()), shown(out)
        bodies = [json.dumps(r.body or {}) for r in server.received]
        assert sum("Shem" in b for b in bodies) == 2 and sum("Ham" in b for b in bodies) == 1, (
            bodies, shown(out))
        # the audit's passages (KJV famous-long) trigger no fault: every run completes -> 0
        out = cli(["audit", "--model", spec, "--text", "kjv:famous-long",
                   "--passages", "2", "--n-controls", "2", "--no-pearl",
                   "--max-new-tokens", "8", "--bootstrap", "50"], env)
        outputs.append(out)
        assert exit_code(out) == 0, shown(out)
        audits = sorted(runs.glob("audit-*"))
        assert len(audits) == 1 and audits[0].is_dir(), sorted(runs.iterdir())
        (probe_run,) = [p for p in runs.iterdir() if "-prefix_probe-" in p.name]
        audit_runs = sorted(p.parent for p in (audits[0] / "runs").glob("*/run.sqlite"))
        assert audit_runs, f"the audit stored no runs under {audits[0] / 'runs'}"
        for args in (["runs", "list"], ["runs", "show", probe_run.name],
                     ["runs", "show", str(audit_runs[0])], ["report", str(audits[0])]):
            out = cli(args, env)
            outputs.append(out)
            assert exit_code(out) == 0, shown(out)
        assert any(SECRET in str(r.headers) for r in server.received)  # it was sent
    text = "\n".join(outputs)
    assert "HTTP 401" in text and "HTTP 500" in text  # errors were hit
    assert "<redacted>" in text  # the echoed key was scrubbed, not merely absent
    assert SECRET not in text
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".sqlite" for p in written)
    leaks = [p for p in written if SECRET.encode() in p.read_bytes()]
    assert leaks == [], leaks
    reports = {p.name for p in written if p.parent == audits[0]}
    assert {"report.html", "report.md", "report.json"} <= reports, (
        "the audit wrote no report to search:\n" + text[-3000:])


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1", "example.org"])
def test_serve_refuses_a_remote_host_unless_told(
    host: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--host", host, "--port", "0"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert f"serve --host {host}: not a loopback address" in err and "--allow-remote" in err


def test_serve_binds_loopback_by_default() -> None:
    from recitation.cli import build_parser

    args = build_parser().parse_args(["serve"])
    assert args.host == "127.0.0.1" and args.allow_remote is False
    with start_server(ScriptedModel()) as h:
        assert h.host == "127.0.0.1"
