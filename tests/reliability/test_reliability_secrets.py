"""Secrets and safety: a recognizable fake API key, API-backed commands against a local
server (successes and errors whose replies echo the key), then every output is searched for
it: stdout, stderr (verbose logs), the run stores, the response cache, the audit's HTML /
Markdown / JSON report and every other file written. ``recitation serve`` refuses a
non-loopback address unless told."""

from __future__ import annotations

import json
import os
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
        outputs.append(cli(["run", str(tmp_path / "run.yaml")], env))
        outputs.append(cli(["audit", "--model", spec, "--text", "kjv:famous-long",
                            "--passages", "2", "--n-controls", "2", "--no-pearl",
                            "--max-new-tokens", "8", "--bootstrap", "50"], env))
        outputs.append(cli(["runs", "list"], env))
        for run in sorted((tmp_path / "runs").iterdir())[:2]:
            outputs.append(cli(["runs", "show", run.name], env))
        audits = [p for p in (tmp_path / "runs").rglob("*") if p.is_dir()
                  and p.name.startswith("audit")] if (tmp_path / "runs").exists() else []
        for a in audits[:1]:
            outputs.append(cli(["report", str(a)], env))
        assert any(SECRET in str(r.headers) for r in server.received)  # it was sent
    text = "\n".join(outputs)
    assert "-> 0" in text and "HTTP 401" in text and "HTTP 500" in text  # errors were hit
    assert "<redacted>" in text  # the echoed key was scrubbed, not merely absent
    assert SECRET not in text
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".sqlite" for p in written)
    leaks = [p for p in written if SECRET.encode() in p.read_bytes()]
    assert leaks == [], leaks
    reports = [p for p in written if p.suffix in (".html", ".md")]
    if (Path(__file__).parents[2] / "src" / "recitation" / "report").is_dir():
        assert reports, "the audit wrote no report to search:\n" + text[-3000:]


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
