"""The organism's data, config and checkpoint names, without a model (a word tokenizer
stands in for SmolLM2's)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from recitation.errors import ConfigError, CorpusError, MissingDependencyError
from recitation.organism.config import QUICK, make_config
from recitation.organism.data import (
    Novel,
    cut_passages,
    load_split,
    save_split,
    split_passages,
    training_order,
)
from recitation.organism.paths import organism_checkpoint, organisms_root, parse_checkpoint

WORDS = ("It is a truth universally acknowledged that a single man in possession of a good "
         "fortune must be in want of a wife").split()


def offsets(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(r"\S+", text)]


def count(text: str) -> int:
    return len(offsets(text))


def novels(n: int = 4, words: int = 400) -> list[Novel]:
    return [Novel(f"Book{i}", " ".join(f"{WORDS[j % len(WORDS)]}{i}" for j in range(words)))
            for i in range(n)]


def test_passages_are_consecutive_token_windows() -> None:
    novel = Novel("B", "one two  three\nfour five six seven")
    spans = cut_passages(novel, offsets, 3)
    assert [novel.text[a:b] for a, b in spans] == ["one two  three", "four five six"]


def test_split_by_passage_sizes_doses_and_determinism() -> None:
    cfg = make_config(members_per_dose=3, nonmembers=5, passage_tokens=16, seed=7)
    ps = split_passages(cfg, novels(), offsets, count)
    assert Counter(p.dose for p in ps) == {1: 3, 4: 3, 16: 3, 0: 5}
    assert all(p.member == (p.dose > 0) for p in ps)
    assert all(p.n_tokens == 16 and count(p.text) == 16 for p in ps)
    assert len({p.id for p in ps}) == len(ps)  # no passage drawn twice
    assert ps == split_passages(cfg, novels(), offsets, count)
    other = split_passages(cfg.model_copy(update={"seed": 8}), novels(), offsets, count)
    assert [p.id for p in other] != [p.id for p in ps]


def test_split_by_book_keeps_novels_apart() -> None:
    cfg = make_config(split="book", members_per_dose=2, passage_tokens=16, seed=1)
    ps = split_passages(cfg, novels(6), offsets, count)
    member_books = {p.novel for p in ps if p.member}
    other_books = {p.novel for p in ps if not p.member}
    assert member_books and other_books and not member_books & other_books
    assert sum(p.member for p in ps) == 6 and sum(not p.member for p in ps) == 6


def test_too_small_a_source_is_a_clear_error() -> None:
    cfg = make_config(members_per_dose=50, passage_tokens=100)
    with pytest.raises(ConfigError, match=r"needs 300 passages but the source has only 16"):
        split_passages(cfg, novels(), offsets, count)


def test_training_order_repeats_each_member_dose_times() -> None:
    cfg = make_config(members_per_dose=2, passage_tokens=16)
    ps = split_passages(cfg, novels(), offsets, count)
    order = training_order(ps, seed=0, epoch=1)
    assert Counter(order) == {i: p.dose for i, p in enumerate(ps) if p.dose}
    assert order == training_order(ps, seed=0, epoch=1)
    assert order != training_order(ps, seed=0, epoch=2)


def test_split_round_trip_and_hash_check(tmp_path: Path) -> None:
    ps = split_passages(make_config(members_per_dose=1, passage_tokens=16), novels(),
                        offsets, count)
    path = tmp_path / "split.json"
    save_split(path, ps, {"format": 1})
    assert load_split(path) == ps
    doc = json.loads(path.read_text())
    assert doc["summary"]["members_by_dose"] == {"1": 1, "4": 1, "16": 1}
    doc["passages"][0]["text"] += "!"
    path.write_text(json.dumps(doc))
    with pytest.raises(CorpusError, match="does not match its hash"):
        load_split(path)


@pytest.mark.parametrize(("field", "value", "match"), [
    ("doses", (4, 0), "doses must be distinct positive"),
    ("passage_tokens", 4, "passage_tokens"),
    ("name", "../x", "organism name"),
    ("split", "chapter", "split"),
])
def test_bad_config_names_the_field(field: str, value: Any, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        make_config(**{field: value})


def test_fingerprint_fields_ignore_name_and_data_location() -> None:
    a = make_config(quick=True)
    assert a == QUICK
    b = make_config(quick=True, name="other", data_dir=Path("/elsewhere"))
    assert a.fingerprint_fields() == b.fingerprint_fields()
    assert a.fingerprint_fields() != make_config(quick=True, seed=1).fingerprint_fields()


def test_missing_data_dir_says_how_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="RECITATION_DATA"):
        make_config(data_dir=tmp_path / "nope").resolved_data_dir()


def test_checkpoint_names() -> None:
    assert parse_checkpoint("epoch3") == ("default", 3)
    assert parse_checkpoint("quick:epoch2") == ("quick", 2)
    for bad in ("epoch", "quick:3", "a/b:epoch1", "epoch-1"):
        with pytest.raises(ConfigError):
            parse_checkpoint(bad)


def test_organism_checkpoint_resolves_and_explains(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"recitation organism build --quick"):
        organism_checkpoint("quick:epoch1", root=tmp_path)
    d = tmp_path / "quick"
    (d / "epoch1").mkdir(parents=True)
    (d / "epoch1" / "config.json").write_text("{}")
    (d / "manifest.json").write_text(json.dumps({"epochs": [{"epoch": 0}, {"epoch": 1}]}))
    assert organism_checkpoint("quick:epoch1", root=tmp_path) == d / "epoch1"
    with pytest.raises(ConfigError, match=r"no epoch 5: it has epochs \[0, 1\]"):
        organism_checkpoint("quick:epoch5", root=tmp_path)
    with pytest.raises(ConfigError, match="is missing"):
        organism_checkpoint("quick:epoch0", root=tmp_path)


def test_organisms_live_in_the_model_cache(monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    from recitation.models.local import model_cache_dir

    assert organisms_root() == model_cache_dir() / "organisms"
    monkeypatch.delenv("RECITATION_MODEL_CACHE_DIR")
    monkeypatch.setenv("RECITATION_CACHE_DIR", str(tmp_path))
    assert organisms_root() == model_cache_dir() / "organisms" == tmp_path / "models" / \
        "organisms"


def test_lora_without_peft_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "peft", None)  # importing it now fails, as if absent
    from recitation.organism.train import attach_lora

    with pytest.raises(MissingDependencyError, match=r"pip install 'recitation\[organism\]'"):
        attach_lora(object(), 8)


def test_cli_parses_build_options() -> None:
    from recitation.cli import build_parser

    args = build_parser().parse_args(["organism", "build", "--quick", "--split", "book",
                                      "--epochs", "3", "--seed", "5", "--doses", "2", "8"])
    assert (args.quick, args.split, args.epochs, args.seed, args.doses) == (
        True, "book", 3, 5, [2, 8])


def test_pairing_balances_novels_between_members_and_nonmembers() -> None:
    def novel_counts(pair: bool, member: bool) -> Counter[str]:
        cfg = make_config(members_per_dose=4, passage_tokens=16, seed=3, pair_by_novel=pair)
        ps = split_passages(cfg, novels(8, 200), offsets, count)
        return Counter(p.novel for p in ps if p.member == member)

    assert novel_counts(True, True) == novel_counts(True, False)
    assert novel_counts(False, True) != novel_counts(False, False)  # unpaired: by chance


def test_organisms_of_other_seeds_can_share_their_nonmembers() -> None:
    """nonmembers_seed: the non-members are exactly those the named seed draws, the members
    this seed's own uniform draw from the rest; unset, the fingerprint is as before."""
    from recitation.organism.shared_split import shared_nonmember_split as shared_split

    cfg = make_config(members_per_dose=3, passage_tokens=16, nonmembers=20)
    first = split_passages(cfg, novels(), offsets, count)
    shared = cfg.model_copy(update={"seed": 5, "nonmembers_seed": 0})
    ps = shared_split(shared, novels(), offsets, count)

    def key(p: Any) -> tuple[str, int]:
        return (p.novel, p.start)

    assert {key(p) for p in ps if not p.member} == {key(p) for p in first if not p.member}
    members = {key(p) for p in ps if p.member}
    assert len(members) == cfg.members and not members & {key(p) for p in ps if not p.member}
    assert members != {key(p) for p in first if p.member}  # a draw of its own
    own = split_passages(cfg.model_copy(update={"seed": 5}), novels(), offsets, count)
    assert ps != own and shared_split(shared, novels(), offsets, count) == ps
    assert Counter(p.dose for p in ps) == Counter(p.dose for p in first)
    assert all(p.n_tokens == 16 and p.id == f"{p.novel}@{p.start}" for p in ps)
    assert "nonmembers_seed" not in cfg.fingerprint_fields()
    assert shared.fingerprint_fields()["nonmembers_seed"] == 0
    with pytest.raises(ConfigError, match="passage splits only"):
        shared_split(make_config(split="book", nonmembers_seed=0, members_per_dose=1,
                                 passage_tokens=16), novels(6), offsets, count)
