"""Where the Ray actors run (recitation.signals.ray_devices), without a cluster: the driver's
plan from the spec's device and the GPUs a cluster declares, and an actor's check of the GPU
it was given (this machine's torch sees none: the actor falls back under auto, fails with
the fix under cuda). The actors on a cluster declaring GPUs: tests/signals/test_ray.py."""

from __future__ import annotations

import pytest

from recitation.errors import ConfigError
from recitation.signals.ray_devices import ActorDevice, actor_device, plan_devices


def test_auto_on_a_cluster_without_gpus_runs_cpu_actors_under_the_cpu_identity() -> None:
    plan = plan_devices("smollm2", 0)
    assert (plan.device.spec, plan.gpus, plan.fallback) == ("smollm2@cpu", 0, None)
    assert "device" not in plan.device.identity  # the identity every CPU store was keyed by
    assert plan.actors(workers=4, shards=3) == 3 and plan.actors(2, 10) == 2


def test_auto_on_a_cluster_with_gpus_asks_one_gpu_per_actor_and_may_fall_back() -> None:
    plan = plan_devices("local:smollm2", 2)
    assert (plan.device.spec, plan.gpus) == ("local:smollm2@cuda", 1)
    assert plan.device.identity["device"] == "cuda"
    assert plan.device.identity["dtype"] == "bfloat16"  # auto's dtype on a GPU
    assert plan.fallback is not None and plan.fallback.spec == "local:smollm2@cpu"
    assert plan.fallback.identity == plan_devices("smollm2@cpu", 2).device.identity
    assert plan.actors(workers=3, shards=10) == 2  # one model per GPU
    assert plan.actors(workers=3, shards=1) == 1


def test_cuda_names_no_index_inside_an_actor_and_never_falls_back() -> None:
    plan = plan_devices("smollm2@cuda:1", 4)
    assert (plan.device.spec, plan.gpus, plan.fallback) == ("smollm2@cuda", 1, None)
    assert plan.actors(workers=8, shards=8) == 4


def test_cuda_on_a_cluster_that_declares_no_gpu_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"declares no GPU.*ray start --num-gpus"):
        plan_devices("smollm2@cuda", 0)


def test_cpu_and_served_models_ask_for_no_gpu() -> None:
    assert plan_devices("smollm2@cpu", 8).gpus == 0
    served = plan_devices("openai:llama@http://127.0.0.1:8000/v1", 8)
    assert (served.device.spec, served.gpus, served.fallback) == (
        "openai:llama@http://127.0.0.1:8000/v1", 0, None)


def _no_cuda() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("torch sees a CUDA device here")


def test_an_actor_without_cuda_falls_back_under_auto_and_says_why(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _no_cuda()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    gpu, cpu = ActorDevice("smollm2@cuda", {}), ActorDevice("smollm2@cpu", {})
    used, reason = actor_device(gpu, cpu)
    assert used is cpu
    assert "given GPU '1' (CUDA_VISIBLE_DEVICES)" in reason and "sees no CUDA device" in reason
    assert actor_device(cpu, None) == (cpu, "")


def test_an_actor_without_cuda_fails_under_cuda_with_the_fix(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _no_cuda()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    with pytest.raises(ConfigError, match=r"given GPU '0'.*sees no CUDA device.*--device cpu"):
        actor_device(ActorDevice("smollm2@cuda", {}), None)
