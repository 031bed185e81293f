"""A local model's tokenizer fingerprint is read from its folder's files, so a cache keyed by
it (DC-PDD's reference counts) is found without importing a model library."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from recitation.models.tokenizer import LazyTokenizer, folder_fingerprint


def _folder(path: Path, *, lowercase: bool = False, local_files_only: bool = False) -> Path:
    """A real tokenizer folder: a word-level tokenizer built with the ``tokenizers`` library
    (optionally lower-casing), and a transformers-style ``tokenizer_config.json``."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    vocab = {"[UNK]": 0, "the": 1, "The": 2, "ark": 3}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    if lowercase:
        tok.normalizer = normalizers.Lowercase()
    path.mkdir(parents=True)
    tok.save(str(path / "tokenizer.json"))
    (path / "tokenizer_config.json").write_text(json.dumps(
        {"unk_token": "[UNK]", "local_files_only": local_files_only, "is_local": True}),
        encoding="utf-8")
    return path


def test_the_fingerprint_follows_tokenization_not_how_a_folder_was_saved(
        tmp_path: Path) -> None:
    """Two folders that tokenize alike share it (a fine-tune saved after loading its base
    with ``local_files_only``: the only difference the organism's folders have); a different
    normalizer, or a changed tokenizer_config key that is not a load record, changes it;
    a folder with no tokenizer.json has none (the loaded tokenizer is asked instead)."""
    from tokenizers import Tokenizer

    base = _folder(tmp_path / "base")
    fine_tune = _folder(tmp_path / "fine-tune", local_files_only=True)
    lower = _folder(tmp_path / "lower", lowercase=True)
    # the two tokenizers really split text differently, and the first two alike
    t = [Tokenizer.from_file(str(p / "tokenizer.json")) for p in (base, fine_tune, lower)]
    assert t[0].encode("The ark").ids == t[1].encode("The ark").ids == [2, 3]
    assert t[2].encode("The ark").ids == [1, 3]
    assert folder_fingerprint(base) == folder_fingerprint(fine_tune)
    assert folder_fingerprint(base) != folder_fingerprint(lower)
    cfg = json.loads((fine_tune / "tokenizer_config.json").read_text(encoding="utf-8"))
    (fine_tune / "tokenizer_config.json").write_text(json.dumps(cfg | {"unk_token": "ark"}),
                                                     encoding="utf-8")
    assert folder_fingerprint(base) != folder_fingerprint(fine_tune)
    (base / "tokenizer.json").unlink()
    assert folder_fingerprint(base) is None


def test_a_lazy_tokenizer_reads_nothing_until_used() -> None:
    reads: list[int] = []

    class Words:
        vocab_size = 7

        def encode(self, text: str) -> list[int]:
            return [len(w) for w in text.split()]

        def decode(self, ids: list[int]) -> str:
            return " ".join("x" * i for i in ids)

        def tokens(self, text: str) -> list[str]:
            return text.split()

    def load() -> Words:
        reads.append(1)
        return Words()

    lazy = LazyTokenizer(load, "fp")
    assert lazy.fingerprint() == "fp" and reads == []
    assert lazy.tokens("a bc") == ["a", "bc"] and lazy.encode("a bc") == [1, 2]
    assert lazy.vocab_size == 7 and lazy.decode([2]) == "xx" and reads == [1]  # read once


@pytest.mark.model
def test_dcpdd_counts_read_back_import_no_model_library(tmp_path: Path) -> None:
    """A second process (an audit answered from the response cache) finds the embedded
    model's DC-PDD counts by the folder fingerprint: it imports neither transformers nor
    torch, and the counts equal a fresh count with the loaded tokenizer."""
    from recitation.detect import dcpdd
    from recitation.models.local import LocalModel

    env = dict(os.environ, RECITATION_CACHE_DIR=str(tmp_path / "cache"))
    corpus = tmp_path / "ref.txt"
    corpus.write_text("In the beginning God created the heaven and the earth.\n\n"
                      "And the earth was without form, and void.", encoding="utf-8")
    script = ("import json, sys\n"
              "from recitation.detect import dcpdd\n"
              "from recitation.models.local import LocalModel\n"
              f"f = dcpdd.reference_counts({str(corpus)!r}, LocalModel('smollm2').tokenizer())\n"
              "print(json.dumps([f.total, f.vocab_size, f.counts, "
              "'transformers' in sys.modules, 'torch' in sys.modules]))\n")

    def run() -> list[object]:
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, check=True).stdout
        return list(json.loads(out.strip().splitlines()[-1]))

    first = run()  # counts (reads the tokenizer: transformers is imported)
    second = run()  # reads the counts back
    assert first[3] is True and second[3:] == [False, False]
    tok = LocalModel("smollm2").load().tokenizer
    fresh = dcpdd.count_tokens(dcpdd.corpus_documents(str(corpus)),
                               lambda s: tok.convert_ids_to_tokens(
                                   tok.encode(s, add_special_tokens=False)), len(tok))
    assert second[:3] == first[:3] == [fresh.total, fresh.vocab_size, fresh.counts]
