"""``recitation serve``: the command (options, loopback check, signals) around
:func:`recitation.serve.server.start_server`."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading

from recitation.models.base import Model
from recitation.serve.server import LOOPBACK, start_server

log = logging.getLogger("recitation.serve")


def add_serve_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register ``recitation serve``."""
    p = subparsers.add_parser(
        "serve",
        help="serve a local model over an OpenAI- and Anthropic-compatible HTTP API",
        description="Serve a model on an OpenAI-compatible (/v1/chat/completions, "
        "/v1/completions, /v1/models) and Anthropic-compatible (/v1/messages) "
        "HTTP API. No API key is checked: keep it on 127.0.0.1.",
    )
    p.add_argument(
        "--model",
        default="smollm2",
        metavar="SPEC",
        help="model spec, local[:model] (see 'Model specs' in the README): 'smollm2' "
        "(embedded), a transformers directory or a .gguf; only local models are served",
    )
    p.add_argument("--backend", default=None, choices=["local"],
                   help="deprecated alias: write --model local:NAME")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1); another than a loopback "
                   "address needs --allow-remote")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow --host to be a non-loopback address: anyone who can reach it "
                   "may use the model (no API key is checked)")
    p.add_argument("--port", type=int, default=8000, help="port (0: any free port)")
    from recitation.models.config import add_device_option

    add_device_option(p)
    p.add_argument(
        "--threads", type=int, default=None, help="CPU threads for the local model (default: all)"
    )
    from recitation.serve.logprob_faults import FAULTS

    p.add_argument("--logprob-fault", choices=FAULTS, default=None,
                   help="a test aid: answer wrong prompt log-probabilities as a broken "
                   "engine does (shift: one position late; offset: -3 nats; scale: halved; "
                   "batch: depending on the other texts scored), for testing `recitation "
                   "check` and the check before a run (docs/detection.md); never for use")
    p.set_defaults(func=serve_command)


def serve_command(args: argparse.Namespace) -> int:
    from recitation.errors import ConfigError
    from recitation.models.config import resolve_model_spec
    from recitation.models.local import LocalModel

    if args.host not in LOOPBACK and not getattr(args, "allow_remote", False):
        raise ConfigError(f"serve --host {args.host}: not a loopback address; the server "
                          f"checks no API key, so anyone who can reach {args.host} could use "
                          f"the model. Pass --allow-remote to serve there anyway.")
    cfg = resolve_model_spec(args.model, backend=getattr(args, "backend", None))
    if cfg["backend"] != "local":
        raise ConfigError(f"serve --model '{args.model}': only local models can be served "
                          f"(backend '{cfg['backend']}' is already an API); use local:NAME")
    model = LocalModel(cfg["model"], threads=getattr(args, "threads", None),
                       device=cfg.get("device", "auto"))
    if args.host not in LOOPBACK:
        log.warning("serving on %s: the server checks no API key", args.host)
    served: Model = model
    if fault := getattr(args, "logprob_fault", None):
        from recitation.serve.logprob_faults import LogprobFaultModel

        served = LogprobFaultModel(model, fault)
        log.warning("--logprob-fault %s: this server answers WRONG log-probabilities", fault)
    try:
        handle = start_server(served, args.host, args.port, record_requests=False)
    except OSError as e:
        print(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}", file=sys.stderr)
        return 2
    _stop_on_signals()
    try:
        model.load()  # before announcing the URL, so the first request is not slow
        print(f"Serving {model.name} at {handle.url}"
              + (f" with WRONG log-probabilities (--logprob-fault {fault})" if fault else ""))
        print(f"  openai:    OpenAI(base_url='{handle.url}', api_key='unused')")
        print(f"  anthropic: Anthropic(base_url='{handle.root_url}', api_key='unused')")
        print("Press Ctrl-C to stop.", flush=True)
        handle.wait()
    except KeyboardInterrupt:
        print("stopping", flush=True)
    finally:
        handle.stop()
    if handle.model_threads_running:
        _exit_now(0)
    return 0


def _stop_on_signals() -> None:
    """Ctrl-C (SIGINT) and SIGTERM stop the server, even when the process was started with
    SIGINT ignored (a background job of a non-interactive shell inherits that, and Python
    then installs no KeyboardInterrupt handler: the server could not be stopped)."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, interrupt)


def _exit_now(code: int) -> None:
    """Leave the process at once, abandoning a model call still running on a worker thread.

    A normal interpreter exit would tear the model's native library down under the running
    thread (torch aborts: "terminate called without an active exception") or wait for it.
    """
    log.info("exiting without waiting for the abandoned model call")
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
