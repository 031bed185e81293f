"""An audit as a YAML config, like every other job (``recitation run audit.yaml``)::

    job: audit
    name: my-book              # the audit folder's prefix (default: audit)
    text: [my_book.txt]        # what --text takes (repeatable there, a list here)
    models: [smollm2]          # model specs (default: the embedded smollm2)
    controls: [unseen.txt]     # what --controls takes (default: a built-in set where one fits)
    redact: false
    params:                    # AuditSettings: sizes and method settings
      passages: 12
      pearl: false

Every field is checked and an unknown one is refused by name. ``recitation demo`` is the
packaged ``recitation/data/demo-audit.yaml`` with its command-line options on top.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from recitation.audit.run import AuditSettings, create_audit
from recitation.errors import ConfigError
from recitation.runs.config import format_validation_error, read_yaml


class AuditConfig(BaseModel):
    """One audit: its inputs, its models and its settings."""

    model_config = ConfigDict(extra="forbid")

    job: Literal["audit"]
    name: str = Field("audit", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    text: list[str] = Field(min_length=1)
    models: list[str] = Field(default_factory=lambda: ["smollm2"], min_length=1)
    controls: list[str] = Field(default_factory=list)
    redact: bool = False
    params: AuditSettings = Field(default_factory=AuditSettings)


def is_audit(data: Any) -> bool:
    """True for the data of an audit config (``job: audit``)."""
    return isinstance(data, dict) and data.get("job") == "audit"


def parse_audit_config(data: Any, *, source: str = "audit config") -> AuditConfig:
    try:
        return AuditConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigError(format_validation_error(e, prefix=f"{source}: ")) from None


def load_audit_config(path: Path) -> AuditConfig:
    return parse_audit_config(read_yaml(path), source=str(path))


def demo_config() -> AuditConfig:
    """The demo audit (``recitation/data/demo-audit.yaml``)."""
    path = Path(str(files("recitation") / "data" / "demo-audit.yaml"))
    return load_audit_config(path)


def create_from_config(cfg: AuditConfig, runs_dir: Path | None = None) -> Path:
    """The audit folder of ``cfg``, created (not run)."""
    return create_audit(cfg.text, cfg.models, cfg.controls, cfg.params, runs_dir=runs_dir,
                        redact=cfg.redact, name=cfg.name)
