"""What a local model *is*, for the response cache and the run store: two different sets of
weights never share an identity, one set of weights keeps its identity wherever it lies, and
the embedded model keeps the identity existing caches were written under. No model is
loaded (identity reads files and manifests only)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from recitation.models.local import LocalModel, directory_digest, file_sha256


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A model cache of this test's own (the file digests are remembered there)."""
    d = tmp_path / "models"
    monkeypatch.setenv("RECITATION_MODEL_CACHE_DIR", str(d))
    return d


def _checkpoint(path: Path, weights: bytes, config: str = '{"model_type": "llama"}') -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text(config, encoding="utf-8")
    (path / "model.safetensors").write_bytes(weights)
    (path / "tokenizer.json").write_text("{}", encoding="utf-8")
    return path


MB2 = 2 << 20


def test_the_embedded_model_keeps_its_identity() -> None:
    """Caches written before identities carried digests stay valid for the embedded model."""
    assert LocalModel("smollm2").identity() == {"backend": "local",
                                                "model": "SmolLM2-135M-Instruct.Q4_1"}


def test_directories_with_the_same_name_and_size_differ(cache: Path, tmp_path: Path) -> None:
    """Two fine-tunes of one architecture: same config, same file sizes, same folder name
    (epoch2), different weights -> different identities."""
    a = _checkpoint(tmp_path / "a" / "epoch2", b"\x01" * MB2)
    b = _checkpoint(tmp_path / "b" / "epoch2", b"\x02" * MB2)
    ia, ib = LocalModel(str(a)).identity(), LocalModel(str(b)).identity()
    assert ia["model"] == ib["model"] == "epoch2"
    assert ia != ib and len(ia["digest"]) == 16


def test_same_weights_elsewhere_same_identity(cache: Path, tmp_path: Path) -> None:
    a = _checkpoint(tmp_path / "a" / "m", os.urandom(MB2))
    b = tmp_path / "b" / "m"
    shutil.copytree(a, b)
    assert LocalModel(str(a)).identity() == LocalModel(str(b)).identity()
    # a different config (or tokenizer) is a different model too
    (b / "config.json").write_text('{"model_type": "llama", "vocab_size": 7}', "utf-8")
    assert LocalModel(str(a)).identity() != LocalModel(str(b)).identity()


def test_large_files_are_hashed_once_per_version(cache: Path, tmp_path: Path) -> None:
    d = _checkpoint(tmp_path / "m", b"\x03" * MB2)
    weights = d / "model.safetensors"
    first = file_sha256(weights)
    memos = list((cache / "digests").iterdir())
    assert len(memos) == 1 and memos[0].read_text() == first  # only the 2 MB file
    before = directory_digest(d)
    weights.write_bytes(b"\x04" * MB2)  # same size, new content and modification time
    os.utime(weights, ns=(1, 1))
    assert file_sha256(weights) != first and directory_digest(d) != before
    assert len(list((cache / "digests").iterdir())) == 2


def test_identity_is_computed_once_and_not_shared(cache: Path, tmp_path: Path) -> None:
    m = LocalModel(str(_checkpoint(tmp_path / "m", b"\x05" * 10)))
    ident = m.identity()
    ident["model"] = "changed"  # a caller's copy
    assert m.identity()["model"] == "m"


def test_an_organism_folder_is_named_by_its_manifest(cache: Path, tmp_path: Path) -> None:
    """A checkpoint beside an organism manifest is identified by the manifest (no hashing),
    whatever path it is loaded by."""
    root = tmp_path / "org"
    ckpt = _checkpoint(root / "epoch1", b"\x06" * 10)
    (root / "manifest.json").write_text(json.dumps({
        "name": "mine", "fingerprint": "f" * 64,
        "epochs": [{"epoch": 0, "digest": "0" * 64}, {"epoch": 1, "digest": "1" * 64}]}))
    m = LocalModel(str(ckpt))
    assert m.name == "organism:mine:epoch1"
    assert m.identity() == {"backend": "local", "model": "organism:mine:epoch1",
                            "fingerprint": "f" * 64, "weights": "1" * 64}
    assert not (cache / "digests").exists()
    # a manifest that does not list the folder: hashed like any other directory
    other = _checkpoint(root / "epoch7", b"\x06" * 10)
    assert set(LocalModel(str(other)).identity()) == {"backend", "model", "digest"}


def test_the_dtype_is_a_checked_local_option_in_the_identity() -> None:
    """float32 keeps the identity existing caches were written under; bfloat16 adds itself,
    so its answers are never read back for float32's. A model config passes it through;
    another backend, or a type the backend has not, is refused with the choices."""
    from pydantic import ValidationError

    from recitation.models.config import ModelConfig
    from recitation.models.registry import build_backend

    assert "dtype" not in LocalModel("smollm2", dtype="float32").identity()
    built = build_backend(ModelConfig(model="smollm2", dtype="bfloat16"))
    assert isinstance(built, LocalModel) and built.dtype == "bfloat16"
    assert built.identity()["dtype"] == "bfloat16"
    with pytest.raises(ValidationError, match="not one of float32, bfloat16"):
        ModelConfig(model="smollm2", dtype="float16")
    with pytest.raises(ValidationError, match="local backend only"):
        ModelConfig(backend="openai", model="m", dtype="bfloat16")
    from recitation.models.registry import shared_backends

    with shared_backends():  # one backend per configuration: the dtype is part of it
        a, b = (build_backend(ModelConfig(model="smollm2", dtype=d))
                for d in ("float32", "bfloat16"))
        assert a is not b and build_backend(ModelConfig(model="smollm2")) is a
