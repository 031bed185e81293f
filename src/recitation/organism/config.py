"""What an organism is made from: data, split, doses, training settings, seed.

Two presets: :data:`DEFAULT` (build + benchmark within 30 minutes on a 2-core machine) and
:data:`QUICK` (a few minutes, for CI). The fingerprint of a config covers everything that
changes the weights (not the name, nor where the data folder is: its contents are hashed
separately by the builder).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from recitation.errors import ConfigError
from recitation.models.device import Device
from recitation.organism.paths import (
    BOOK_NAME,
    BOOK_QUICK_NAME,
    DEFAULT_NAME,
    LOWFPR_LONG_NAME,
    LOWFPR_NAME,
    LOWFPR_QUICK_NAME,
    QUICK_NAME,
    check_name,
)

FORMAT = 2
"""Bumped whenever the builder changes what it produces for the same config."""

PD_EXCLUDED = ("AHandfulOfDust",)
"""PDNC novels left out by default: Waugh's *A Handful of Dust* (1934) comes from Project
Gutenberg Canada and is not in the public domain everywhere (e.g. the United States)."""


class OrganismConfig(BaseModel):
    """One organism. Sizes: ``members_per_dose`` passages at each dose, as many
    non-members as members unless ``nonmembers`` says otherwise."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = DEFAULT_NAME
    source: Literal["pdnc"] = "pdnc"
    data_dir: Path | None = Field(None, description="PDNC folder (default: "
                                  "$RECITATION_DATA/pdnc, else ../shared/data/pdnc)")
    split: Literal["passage", "book", "work"] = "passage"
    passage_tokens: int = Field(128, ge=16, le=2048)
    doses: tuple[int, ...] = (1, 4, 16)
    members_per_dose: int = Field(8, ge=1)
    nonmembers: int | None = Field(None, ge=1)
    pair_by_novel: bool = Field(True, description="--split passage: each member drawn with "
                                "a non-member from the same novel (novels balanced)")
    member_books: float = Field(0.5, gt=0, lt=1, description="--split book: share of novels "
                                "whose passages are members")
    exclude: tuple[str, ...] = PD_EXCLUDED
    work: str = Field("", description="--split work: the PDNC novel read straight through "
                      "(organism/work.py)")
    work_words: int = Field(0, ge=0, description="--split work: its first chapters, up to "
                            "the chapter end after this many words (0: all of it)")
    stride_tokens: int = Field(0, ge=0, description="--split work: a window every this "
                               "many tokens (0: three quarters of a window)")
    keep_epochs: tuple[int, ...] = Field((), description="the epochs whose checkpoints are "
                                         "kept (none given: every epoch)")
    epochs: int = Field(3, ge=1, le=100)
    seed: int = 0
    nonmembers_seed: int | None = Field(None, description="--split passage: the non-members "
                                        "drawn as the organism of this seed draws them (the "
                                        "config otherwise the same), this organism's members "
                                        "drawn with its own seed from the rest of the pool: "
                                        "organisms of different seeds share their non-members")
    learning_rate: float = Field(5e-5, gt=0, lt=1)
    batch_size: int = Field(8, ge=1)
    lora: bool = False
    lora_rank: int = Field(16, ge=1)
    threads: int = Field(2, ge=1, description="torch threads while training (the reduction "
                         "order, hence the last bits of the weights, may depend on it)")
    base: str = "smollm2"
    device: Device = Field("auto", description="where it trains (auto, cpu, cuda, cuda:N); "
                           "on CUDA with bfloat16 autocast")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return check_name(v)

    @field_validator("doses")
    @classmethod
    def _doses(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if not v or any(d < 1 for d in v) or len(set(v)) != len(v):
            raise ValueError(f"doses must be distinct positive repeat counts, got {list(v)}")
        return tuple(sorted(v))

    @property
    def members(self) -> int:
        return self.members_per_dose * len(self.doses)

    @property
    def n_nonmembers(self) -> int:
        return self.nonmembers if self.nonmembers is not None else self.members

    def fingerprint_fields(self) -> dict[str, Any]:
        """Every field that changes the weights (not ``name``, not ``data_dir``); the device
        only where it is a GPU (bfloat16 autocast): a CPU build keeps the fingerprint it
        had before devices existed."""
        from recitation.models.device import is_cuda, resolve_device

        fields = self.model_dump(mode="json", exclude={"name", "data_dir", "device", *_LATER})
        later = {k: v for k, v in self.model_dump(mode="json", include=set(_LATER)).items()
                 if getattr(self, k) != OrganismConfig.model_fields[k].default}
        return fields | later | ({"device": "cuda"} if is_cuda(resolve_device(self.device))
                                 else {})

    def resolved_data_dir(self) -> Path:
        """The PDNC folder: ``data_dir``, else ``$RECITATION_DATA/pdnc``, else
        ``../shared/data/pdnc`` (from the current directory)."""
        if self.data_dir is not None:
            d = self.data_dir
        elif os.environ.get("RECITATION_DATA"):
            d = Path(os.environ["RECITATION_DATA"]) / "pdnc"
        else:
            d = Path("..") / "shared" / "data" / "pdnc"
        if not d.is_dir():
            raise ConfigError(f"organism source pdnc: folder {d} not found; pass --data-dir "
                              "or set RECITATION_DATA to the shared data/ directory (it "
                              "holds pdnc/, see its README)")
        return d


_LATER = ("work", "work_words", "stride_tokens", "keep_epochs", "nonmembers_seed")
"""Fields added after organisms were published: in the fingerprint only when set, so an
organism built before them keeps its fingerprint (and is not rebuilt)."""

DEFAULT = OrganismConfig()
QUICK = OrganismConfig(name=QUICK_NAME, passage_tokens=64, members_per_dose=5, epochs=2,
                       learning_rate=1e-4)
LOWFPR = OrganismConfig(name=LOWFPR_NAME, passage_tokens=64, doses=(1, 4),
                        members_per_dose=250, nonmembers=1000, epochs=1, learning_rate=1e-5)
"""The low-FPR benchmark organism (issue 31): 250 members seen once and 250 seen four times
in one epoch (500 members, 80,000 training tokens: the build fits in the hour the issue allows
on 2 cores), 1,000 non-members drawn by the same paired split; enough non-members to read
rates at 1% false positives on held-out halves of 500. Learning rate 1e-5: at the default
5e-5 every white-box score reached AUC 0.94-1.00 on the members seen four times and the
reference-model ratio 0.991 on those seen once (docs/groundtruth-results.md), too easy."""
LOWFPR_QUICK = LOWFPR.model_copy(update={"name": LOWFPR_QUICK_NAME, "members_per_dose": 5,
                                         "nonmembers": 40, "learning_rate": 1e-4})
"""Its CI-sized version (``recitation bench claims --preset lowfpr-quick``): 5 members at each
dose, 40 non-members, one epoch at 1e-4 (about half a minute of training on 2 cores)."""
LOWFPR_LONG = LOWFPR.model_copy(update={"name": LOWFPR_LONG_NAME, "passage_tokens": 256,
                                        "members_per_dose": 100})
"""Its long-passage version, for the methods built for texts of 200+ tokens (CAMIA in its
published setting: ``recitation bench claims --preset lowfpr-long``): 256-token passages,
100 members at each dose (128,000 training tokens, about 32 minutes on 2 cores)."""
BOOK = OrganismConfig(name=BOOK_NAME, split="work", work="PrideAndPrejudice",
                      work_words=20_000, passage_tokens=256, doses=(1,), members_per_dose=1,
                      epochs=16, keep_epochs=(1, 4, 16), learning_rate=3e-4)
"""The whole-book organism (issue 50): the first chapters of *Pride and Prejudice* (to the
chapter end after 20,000 words) read straight through once per epoch, in 256-token windows
that overlap by a quarter; its doses are epochs 1, 4 and 16 (the checkpoints kept)."""
BOOK_QUICK = BOOK.model_copy(update={"name": BOOK_QUICK_NAME, "work_words": 900})
"""Its quick version for CI: the first two chapters (1,654 words)."""
PRESETS: dict[str, OrganismConfig] = {DEFAULT_NAME: DEFAULT, QUICK_NAME: QUICK,
                                      LOWFPR_NAME: LOWFPR, LOWFPR_QUICK_NAME: LOWFPR_QUICK,
                                      LOWFPR_LONG_NAME: LOWFPR_LONG,
                                      BOOK_NAME: BOOK,
                                      BOOK_QUICK_NAME: BOOK_QUICK}


def make_config(*, quick: bool = False, preset: str | None = None,
                **overrides: Any) -> OrganismConfig:
    """A preset (``preset`` by name, else quick or default) with ``overrides`` (``None``
    values ignored); bad values raise :class:`ConfigError` naming the field."""
    if preset is not None and preset not in PRESETS:
        raise ConfigError(f"unknown organism preset {preset!r}; choose from {list(PRESETS)}")
    base = PRESETS[preset] if preset else QUICK if quick else DEFAULT
    fields = base.model_dump() | {k: v for k, v in overrides.items() if v is not None}
    try:
        return OrganismConfig(**fields)
    except ValidationError as exc:
        errs = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                         for e in exc.errors())
        raise ConfigError(f"organism config: {errs}") from exc


TRAINING_CODE = ("recitation.organism.train", "recitation.organism.data")
"""The modules whose source makes a fine-tune's weights (split, data order, training loop):
their bytes join every build key, so a change to them rebuilds."""


def source_digest(*modules: str) -> str:
    """SHA-256 over the source files of ``modules`` (dotted names), in the order given."""
    import importlib.util

    h = hashlib.sha256()
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise ConfigError(f"cannot hash the source of {name}: module not found")
        h.update(name.encode() + b"\0" + Path(spec.origin).read_bytes())
    return h.hexdigest()


def digest(obj: Any) -> str:
    """SHA-256 of the canonical JSON of ``obj``."""
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()
