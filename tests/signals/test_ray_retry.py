"""A Ray pipeline an actor's death failed is run again on the shards not yet written, a
bounded number of times (recitation.signals.on_ray._run, with a pipeline that fails as Ray
Data does: rows, then ActorDiedError); a worker's setup error is not retried."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recitation.errors import ConfigError
from recitation.signals import on_ray
from recitation.signals.ray_devices import plan_devices

exceptions = pytest.importorskip("ray.exceptions")


class Pipeline:
    """Rows for the shards it is given, the first ``deaths`` runs dying after one row."""

    def __init__(self, deaths: int, error: str = "") -> None:
        self.deaths, self.error = deaths, error
        self.runs: list[list[int]] = []

    def __call__(self, ray: Any, plan: Any, root: Path, parts: list[list[str]],
                 left: list[int], workers: int) -> Pipeline:
        self.runs.append(list(left))
        return self

    def iter_rows(self) -> Any:
        left = self.runs[-1]
        for k, i in enumerate(left):
            if k == 1 and len(self.runs) <= self.deaths:
                raise exceptions.ActorDiedError()
            yield {"index": i, "texts": 1, "device": "cpu", "gpus": "", "fallback": "",
                   "error": self.error}


def test_only_the_shards_not_written_run_again_after_an_actor_died(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = Pipeline(deaths=2)
    monkeypatch.setattr(on_ray, "_pipeline", fake)
    pauses: list[float] = []
    where = on_ray._run(None, plan_devices("smollm2", 0), tmp_path, [["a"], ["b"], ["c"]], 2,
                        None, rejoin=pauses.append)
    assert fake.runs == [[0, 1, 2], [1, 2], [2]] and sum(where.values()) == 3
    # each further run after leaving the cluster, a pause and a new connection
    assert pauses == list(on_ray.PAUSES[:2]) and pauses == sorted(pauses) and pauses[0] > 0


def test_rejoining_leaves_the_cluster_waits_and_joins_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []

    class Ray:
        def shutdown(self) -> None:
            calls.append("shutdown")

        def init(self, **kwargs: Any) -> None:
            calls.append(("init", kwargs.get("address")))

    monkeypatch.setattr(on_ray.time, "sleep", lambda s: calls.append(("sleep", s)))
    on_ray._rejoin(Ray(), "127.0.0.1:6379", 30.0)
    assert calls == ["shutdown", ("sleep", 30.0), ("init", "127.0.0.1:6379")]


def test_a_run_whose_actors_keep_dying_fails_after_its_attempts(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = Pipeline(deaths=on_ray.ATTEMPTS)
    monkeypatch.setattr(on_ray, "_pipeline", fake)
    with pytest.raises(exceptions.ActorDiedError):
        on_ray._run(None, plan_devices("smollm2", 0), tmp_path,
                    [[t] for t in "abcdef"], 2, None)
    assert len(fake.runs) == on_ray.ATTEMPTS


def test_a_workers_setup_error_is_raised_once_not_retried(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = Pipeline(deaths=0, error="a Ray worker given GPU '0' cannot use it")
    monkeypatch.setattr(on_ray, "_pipeline", fake)
    with pytest.raises(ConfigError, match="given GPU '0'"):
        on_ray._run(None, plan_devices("smollm2", 0), tmp_path, [["a"], ["b"]], 2, None)
    assert len(fake.runs) == 1
