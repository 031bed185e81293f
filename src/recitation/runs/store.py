"""The run store: one SQLite database (WAL mode) per run directory.

Tables
------
``meta``     key/value: schema version, run id, job, config, status, seeds, versions, git commit.
``calls``    every model call: request hash, request, response, tokens, latency, cost, error.
             Successful calls are looked up by hash on resume, so a killed run never repeats
             a completed call.
``results``  one record per finished work item (primary key ``item_id``): resume skips them.
``events``   warnings and per-item failures ("recorded, retried or skipped").
``items``    every work item of the job, in order, with its input (payload), written when the
             run is created: a resume runs these, not the user's files read again.
``snapshot`` what the job needs after the run besides its items (e.g. the extract job's book
             structure), written when the run is created: reports and exports read it.

The items and snapshot tables were added without a schema change: an older run gets them
(empty) when opened, and the runner fills them from the job's inputs on its next execute.

Every write commits at once; WAL with ``synchronous=NORMAL`` survives a killed process
(``kill -9``) without losing committed rows.

``RunStore`` implements the models' :class:`~recitation.models.calllog.CallLog` and
``ResponseCache`` their :class:`~recitation.models.calllog.ResponseStore`.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from recitation.errors import StoreError
from recitation.models.calllog import CallRecord

log = logging.getLogger(__name__)

__all__ = ["DB_NAME", "SCHEMA_VERSION", "CallRecord", "ResponseCache", "RunStore",
           "default_cache_path"]

SCHEMA_VERSION = 1
DB_NAME = "run.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    kind TEXT NOT NULL,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    latency_s REAL NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    source TEXT NOT NULL DEFAULT 'backend',
    error TEXT,
    attempts INTEGER NOT NULL DEFAULT 1,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS calls_key ON calls(key);
CREATE TABLE IF NOT EXISTS results (
    item_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    record TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS items (
    position INTEGER PRIMARY KEY,
    item_id TEXT NOT NULL UNIQUE,
    payload TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS snapshot (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    level TEXT NOT NULL,
    item_id TEXT,
    message TEXT NOT NULL,
    created REAL NOT NULL
);
"""


def store_error_message(path: Path, err: sqlite3.Error) -> str:
    """What went wrong with the run store at ``path``, and what to do about it."""
    full = getattr(err, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "full" in str(err)
    if full:
        return (f"run store {path}: the disk is full ({err}); results stored so far are kept "
                f"- free some space, then continue with `recitation resume {path.parent}`")
    return f"run store {path}: {err}"


class RunStore:
    """A run's SQLite database. Safe to share between threads of one process."""

    def __init__(self, run_dir: Path, *, create: bool = False) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / DB_NAME
        if not create and not self.path.exists():
            raise StoreError(f"no run store at {self.path} (is '{run_dir}' a run directory?)")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as e:
            raise StoreError(f"cannot open run store {self.path}: {e}") from e
        version = self.get_meta("schema_version")
        if version is None:
            self.set_meta("schema_version", SCHEMA_VERSION)
        elif int(version) != SCHEMA_VERSION:
            raise StoreError(
                f"run store {self.path} has schema {version}; this recitation reads "
                f"schema {SCHEMA_VERSION}"
            )

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """The store's lock; an SQLite failure (a full disk, a damaged file) becomes a
        StoreError naming the store, and the failed transaction is rolled back (SQLite's
        journal keeps the file as it was before it)."""
        with self._lock:
            try:
                yield
            except sqlite3.Error as e:
                with suppress(sqlite3.Error):
                    self._db.rollback()
                raise StoreError(store_error_message(self.path, e)) from None

    # -- meta -------------------------------------------------------------------------
    def set_meta(self, key: str, value: Any) -> None:
        with self._locked():
            self._db.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, json.dumps(value))
            )
            self._db.commit()

    def get_meta(self, key: str, default: Any = None) -> Any:
        with self._locked():
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def all_meta(self) -> dict[str, Any]:
        with self._locked():
            rows = self._db.execute("SELECT key, value FROM meta").fetchall()
        return {k: json.loads(v) for k, v in rows}

    # -- calls ------------------------------------------------------------------------
    def record_call(self, call: CallRecord) -> None:
        with self._locked():
            self._db.execute(
                "INSERT INTO calls(key, kind, backend, model, request, response, input_tokens,"
                " output_tokens, latency_s, cost_usd, source, error, attempts, created)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    call.key, call.kind, call.backend, call.model, json.dumps(call.request),
                    json.dumps(call.response) if call.response is not None else None,
                    call.input_tokens, call.output_tokens, call.latency_s, call.cost_usd,
                    call.source, call.error, call.attempts, time.time(),
                ),
            )
            self._db.commit()

    def lookup_call(self, key: str, nth: int = 0) -> dict[str, Any] | None:
        """The response of the ``nth`` successful call with this hash, if the run made one."""
        with self._locked():
            row = self._db.execute(
                "SELECT response FROM calls WHERE key = ? AND error IS NULL"
                " AND response IS NOT NULL ORDER BY id LIMIT 1 OFFSET ?",
                (key, nth),
            ).fetchone()
        return json.loads(row[0]) if row else None

    def call_totals(self) -> dict[str, Any]:
        with self._locked():
            row = self._db.execute(
                "SELECT COUNT(*), COALESCE(SUM(input_tokens),0), COALESCE(SUM(output_tokens),0),"
                " COALESCE(SUM(cost_usd),0), COALESCE(SUM(latency_s),0),"
                " SUM(CASE WHEN error IS NOT NULL THEN 1 ELSE 0 END),"
                " SUM(CASE WHEN source != 'backend' THEN 1 ELSE 0 END)"
                " FROM calls"
            ).fetchone()
        return {
            "calls": row[0], "input_tokens": row[1], "output_tokens": row[2],
            "cost_usd": row[3], "latency_s": row[4], "errors": row[5] or 0,
            "served_from_cache": row[6] or 0,
        }

    def calls(self) -> list[dict[str, Any]]:
        with self._locked():
            cur = self._db.execute("SELECT * FROM calls ORDER BY id")
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    # -- results ----------------------------------------------------------------------
    def put_result(self, item_id: str, kind: str, record: dict[str, Any]) -> None:
        with self._locked():
            self._db.execute(
                "INSERT OR REPLACE INTO results(item_id, kind, record, created) VALUES (?,?,?,?)",
                (item_id, kind, json.dumps(record), time.time()),
            )
            self._db.commit()

    def has_result(self, item_id: str) -> bool:
        with self._locked():
            row = self._db.execute(
                "SELECT 1 FROM results WHERE item_id = ?", (item_id,)
            ).fetchone()
        return row is not None

    def done_items(self) -> set[str]:
        with self._locked():
            return {r[0] for r in self._db.execute("SELECT item_id FROM results")}

    def results(self, kind: str | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
        with self._locked():
            if kind is None:
                rows = self._db.execute(
                    "SELECT item_id, record FROM results ORDER BY rowid"
                ).fetchall()
            else:
                rows = self._db.execute(
                    "SELECT item_id, record FROM results WHERE kind = ? ORDER BY rowid", (kind,)
                ).fetchall()
        for item_id, rec in rows:
            yield item_id, json.loads(rec)

    # -- items and snapshot -------------------------------------------------------------
    def put_items(self, items: list[tuple[str, dict[str, Any]]]) -> None:
        """Store the job's work items ``(id, payload)`` in order (replacing any)."""
        with self._locked():
            self._db.execute("DELETE FROM items")
            self._db.executemany(
                "INSERT INTO items(position, item_id, payload) VALUES (?,?,?)",
                [(i, item_id, json.dumps(payload)) for i, (item_id, payload)
                 in enumerate(items)],
            )
            self._db.commit()

    def items(self) -> list[tuple[str, dict[str, Any]]]:
        """The stored work items ``(id, payload)`` in order (empty for an older run)."""
        with self._locked():
            rows = self._db.execute(
                "SELECT item_id, payload FROM items ORDER BY position").fetchall()
        return [(item_id, json.loads(payload)) for item_id, payload in rows]

    def set_snapshot(self, snapshot: dict[str, Any]) -> None:
        with self._locked():
            self._db.execute("DELETE FROM snapshot")
            self._db.executemany("INSERT INTO snapshot(key, value) VALUES (?, ?)",
                                 [(k, json.dumps(v)) for k, v in snapshot.items()])
            self._db.commit()

    def snapshot(self) -> dict[str, Any]:
        with self._locked():
            rows = self._db.execute("SELECT key, value FROM snapshot").fetchall()
        return {k: json.loads(v) for k, v in rows}

    # -- events -----------------------------------------------------------------------
    def log_event(self, level: str, message: str, item_id: str | None = None) -> None:
        with self._locked():
            self._db.execute(
                "INSERT INTO events(level, item_id, message, created) VALUES (?,?,?,?)",
                (level, item_id, message, time.time()),
            )
            self._db.commit()

    def events(self) -> list[dict[str, Any]]:
        with self._locked():
            rows = self._db.execute(
                "SELECT level, item_id, message, created FROM events ORDER BY id"
            ).fetchall()
        return [dict(level=r[0], item_id=r[1], message=r[2], created=r[3]) for r in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ResponseCache:
    """A cross-run cache of deterministic model responses (one SQLite file, WAL)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, kind TEXT NOT NULL,"
            " response TEXT NOT NULL, created REAL NOT NULL)"
        )
        self._db.commit()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT response FROM responses WHERE key = ?", (key,)
            ).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, kind: str, response: dict[str, Any]) -> None:
        """Store a response; the cache is an optimisation, so a failed write (a full disk)
        is logged and the run goes on."""
        with self._lock:
            try:
                self._db.execute(
                    "INSERT OR REPLACE INTO responses(key, kind, response, created)"
                    " VALUES (?,?,?,?)", (key, kind, json.dumps(response), time.time()))
                self._db.commit()
            except sqlite3.Error as e:
                with suppress(sqlite3.Error):
                    self._db.rollback()
                log.warning("response cache %s: not written (%s)", self.path, e)

    def close(self) -> None:
        with self._lock:
            self._db.close()


def default_cache_path() -> Path:
    """``$RECITATION_CACHE_DIR/responses.sqlite`` or the user cache dir."""
    import os

    from platformdirs import user_cache_dir

    base = os.environ.get("RECITATION_CACHE_DIR") or user_cache_dir("recitation")
    return Path(base) / "responses.sqlite"
