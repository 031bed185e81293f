"""The organism built for real: fine-tuning the embedded SmolLM2 on PDNC passages.

The quick organism is built once per session (``quick`` in conftest.py; the model cache
keeps it across sessions: a second build with the same inputs is reused) and probed at its
last epoch (epoch 0, the base model, is measured by the ground-truth benchmark);
determinism is checked on an even tinier config built twice from scratch, and LoRA
(``--lora``, through peft) on one built once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recitation.organism.build import BuildResult, build_organism
from recitation.organism.config import OrganismConfig, make_config
from recitation.organism.data import load_split
from recitation.organism.measure import measure_checkpoint
from recitation.organism.paths import organism_checkpoint, organisms_root

pytestmark = [pytest.mark.model, pytest.mark.slow]


@pytest.fixture(scope="module")
def probed(quick: BuildResult) -> dict[int, dict[str, Any]]:
    passages = load_split(quick.directory / "split.json")
    last = quick.manifest["epochs"][-1]["epoch"]
    return {last: measure_checkpoint(quick.directory / f"epoch{last}", passages)}


def _row(measured: dict[str, Any], dose: int) -> dict[str, Any]:
    return next(r for r in measured["by_dose"] if r["dose"] == dose)


def _all_members_auc(measured: dict[str, Any]) -> float:
    from recitation.metrics.stats import roc_auc

    ps = measured["passages"]
    return roc_auc([int(p["dose"] > 0) for p in ps], [-p["nll"] for p in ps])


def test_quick_organism_is_built_and_recorded(quick: BuildResult) -> None:
    m = quick.manifest
    assert [e["epoch"] for e in m["epochs"]] == [0, 1, 2]
    assert m["split"]["members_by_dose"] == {"1": 5, "4": 5, "16": 5}
    assert m["split"]["nonmembers"] == 15
    losses = [e["train_loss"] for e in m["epochs"][1:]]
    assert losses[1] < losses[0]  # it learns
    assert organism_checkpoint("quick:epoch2") == quick.directory / "epoch2"


def test_fine_tuning_makes_members_recitable(probed: dict[int, dict[str, Any]]) -> None:
    """The organism's acceptance check on its last checkpoint. (On epoch 0, the base model,
    the ground-truth benchmark shows the same passages unrecited and LOSS not separating
    them: tests/bench/test_groundtruth_quick.py.)"""
    tuned = probed[max(probed)]
    # after fine-tuning: LOSS separates members, the more so the higher the dose, and the
    # greedy continuation of a 16x member's first 32 tokens reproduces the next 32
    assert _all_members_auc(tuned) > 0.9
    assert _row(tuned, 16)["loss_auc"] > 0.95
    assert _row(tuned, 16)["mean_nll"] < _row(tuned, 4)["mean_nll"] < _row(tuned, 1)["mean_nll"]
    assert _row(tuned, 16)["mean_nll"] < _row(tuned, 0)["mean_nll"] / 5
    assert _row(tuned, 16)["verbatim"] >= 0.6
    assert _row(tuned, 0)["verbatim"] == 0


def test_an_up_to_date_organism_is_reused(quick: BuildResult, shared_data: Path) -> None:
    again = build_organism(make_config(quick=True, data_dir=shared_data / "pdnc"),
                           root=organisms_root())
    assert again.reused and again.manifest == quick.manifest


def test_show_prints_the_manifest(quick: BuildResult, capsys: pytest.CaptureFixture[str]) -> None:
    from recitation.cli import main

    assert main(["organism", "show", "--quick", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["directory"] == str(quick.directory)
    assert shown["manifest"]["fingerprint"] == quick.manifest["fingerprint"]


def _tiny(shared_data: Path, **changes: Any) -> OrganismConfig:
    """The smallest organism: two 32-token members (doses 1 and 2), two non-members."""
    fields: dict[str, Any] = {"name": "tiny", "data_dir": shared_data / "pdnc",
                              "passage_tokens": 32, "members_per_dose": 1, "nonmembers": 2,
                              "doses": (1, 2), "epochs": 1, "batch_size": 2, "threads": 1}
    return make_config(**(fields | changes))


def test_same_seed_same_numbers(shared_data: Path, tmp_path: Path) -> None:
    """Two builds from scratch of a tiny organism give the same losses and weights; another
    seed does not (so the comparison can fail)."""
    tiny = _tiny(shared_data, epochs=2, learning_rate=1e-4)
    a = build_organism(tiny, root=tmp_path / "a")
    b = build_organism(tiny, root=tmp_path / "b")
    c = build_organism(tiny.model_copy(update={"seed": 1, "epochs": 1}), root=tmp_path / "c")
    assert not (a.reused or b.reused)
    assert a.manifest["fingerprint"] == b.manifest["fingerprint"]

    def numbers(r: BuildResult) -> list[tuple[Any, str]]:
        return [(e["train_loss"], e["digest"]) for e in r.manifest["epochs"]]

    assert numbers(a) == numbers(b)
    assert a.manifest["epochs"][2]["train_loss"] is not None
    assert (a.directory / "split.json").read_bytes() == (b.directory / "split.json").read_bytes()
    assert numbers(c)[1] != numbers(a)[1]  # another seed: another first epoch
    assert c.manifest["fingerprint"] != a.manifest["fingerprint"]
    # epoch 0 is the base model, stored once and linked into each organism (no copy each)
    weights = [r.directory / "epoch0" / "model.safetensors" for r in (a, b, c)]
    assert len({w.stat().st_ino for w in weights}) == 1 and weights[0].stat().st_nlink >= 4
    assert numbers(c)[0] == numbers(a)[0]


def test_lora_organism_builds_merged_and_learns(shared_data: Path, tmp_path: Path) -> None:
    """``--lora`` end to end: adapters trained through peft, merged into plain checkpoints
    that LocalModel loads (no adapter weights left), and the members' NLL falls below the
    base model's."""
    import torch
    from safetensors import safe_open

    from recitation.models.local import LocalModel

    built = build_organism(_tiny(shared_data, lora=True, learning_rate=1e-3),
                           root=tmp_path)
    assert not built.reused and built.manifest["config"]["lora"] is True
    epoch0, epoch1 = built.directory / "epoch0", built.directory / "epoch1"
    with safe_open(str(epoch1 / "model.safetensors"), "pt") as f1, \
            safe_open(str(epoch0 / "model.safetensors"), "pt") as f0:
        assert sorted(f1.keys()) == sorted(f0.keys())  # merged: the base model's tensors
        # adapters sit on the projections only: those moved, the embeddings did not
        for key, moved in (("model.layers.0.self_attn.q_proj.weight", True),
                           ("model.layers.0.mlp.down_proj.weight", True),
                           ("model.embed_tokens.weight", False),
                           ("model.norm.weight", False)):
            assert (not torch.equal(f0.get_tensor(key), f1.get_tensor(key))) == moved, key
    members = [p.text for p in load_split(built.directory / "split.json") if p.member]

    def mean_nll(path: Path) -> float:
        scores = LocalModel(str(path), threads=1).score_sync(members)
        return sum(-sum(s.logprobs) / len(s.logprobs) for s in scores) / len(scores)

    base, tuned = mean_nll(epoch0), mean_nll(epoch1)
    assert tuned < base - 0.1, (base, tuned)
    ident = LocalModel(str(epoch1)).identity()
    assert ident["model"] == "organism:tiny:epoch1"
    assert ident["weights"] == built.manifest["epochs"][1]["digest"]


def test_the_manifest_records_device_and_dtype(quick: BuildResult) -> None:
    """Where the organism trained and in what precision: this machine has no GPU, so the
    default device (auto) trained it on the CPU in float32, without autocast."""
    from recitation.models.device import cuda_available

    m = quick.manifest
    assert m["device"] == ("cuda:0" if cuda_available() else "cpu")
    assert m["dtype"] == "float32"
    assert m["autocast"] == ("bfloat16" if cuda_available() else None)
