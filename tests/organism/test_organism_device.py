"""An organism's device: part of its config, checked; a GPU build is another fingerprint
(bfloat16 autocast changes the weights), a CPU build keeps the fingerprint it had before
devices existed."""

from __future__ import annotations

import pytest

from recitation.errors import ConfigError
from recitation.organism.config import QUICK, make_config


def test_a_cpu_build_keeps_its_fingerprint_fields_and_a_gpu_build_differs() -> None:
    # the fields added since (the whole-work split's, the shared non-members') join only
    # when set: organism/config.py
    before = QUICK.model_dump(mode="json", exclude={"name", "data_dir", "device", "work",
                                                    "work_words", "stride_tokens",
                                                    "keep_epochs", "nonmembers_seed"})
    assert make_config(quick=True, device="cpu").fingerprint_fields() == before
    assert make_config(quick=True, device="cuda:1").fingerprint_fields() == before | {
        "device": "cuda"}
    assert make_config(quick=True).device == "auto"


def test_a_bad_device_is_refused_with_the_forms() -> None:
    with pytest.raises(ConfigError, match="device.*auto, cpu, cuda, cuda:N"):
        make_config(quick=True, device="gpu")


def test_training_precision_is_autocast_on_cuda_only() -> None:
    torch = pytest.importorskip("torch")
    from recitation.organism.train import autocast_name, precision

    with precision(torch.device("cpu")):
        assert not torch.is_autocast_enabled("cuda")
    assert isinstance(precision(torch.device("cuda")), torch.autocast)
    assert autocast_name("cuda:0") == "bfloat16" and autocast_name("cpu") is None
