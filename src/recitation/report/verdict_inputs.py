"""One model's findings (as :mod:`recitation.report.collect` gathers them from its runs)
turned into the verdict's typed inputs (:class:`recitation.verdict.Inputs`): the one place
that reads the report's numbers for the verdict, so the verdict never reads a dict key."""

from __future__ import annotations

from typing import Any

from recitation.verdict import Blind, Counts, Detector, Inputs, Null, NullSpan


def _counts(g: dict[str, Any] | None) -> Counts:
    g = g or {}
    return Counts(n=int(g.get("n") or 0), reproduced=int(g.get("reproduced") or 0),
                  passages=int(g.get("passages") or 0),
                  longest_span=int(g.get("longest_span") or 0))


def _pair(text: dict[str, Any] | None, control: dict[str, Any] | None
          ) -> tuple[Counts, Counts] | None:
    t = _counts(text)
    return (t, _counts(control)) if t.n else None


def _null(null: dict[str, Any] | None, fallback: str | None) -> Null | None:
    if not null:
        return None
    spans = [NullSpan(id=str(s["id"]), words=s.get("words"), log10_p=s.get("log10_p"),
                      beyond_chance=bool(s["beyond_chance"])) for s in null["spans"]]
    return Null(model=str(null.get("model") or fallback or "the reference model"),
                alpha=float(null["alpha"]), n=int(null["n"]), spans=spans)


def _detectors(det: dict[str, Any]) -> list[Detector]:
    out = []
    for p in det.get("primary", []):
        d = det["detectors"][p]
        out.append(Detector(name=p, n=int(d["n"]), flagged=int(d["flagged"]),
                            reachable=bool(d["reachable"]), fpr_bound=d.get("fpr_bound"),
                            auc=d.get("auc")))
    return out


def _incomplete(model: dict[str, Any]) -> list[str]:
    return sorted(k for k, prov in (model.get("provenance") or {}).items()
                  if prov.get("status") not in (None, "completed"))


def verdict_inputs(model: dict[str, Any], manifest: dict[str, Any]) -> Inputs:
    """The verdict's inputs for one model of the audit ``manifest``."""
    ex = model.get("extraction") or {}
    rg = (model.get("recap") or {}).get("groups") or {}
    det = model.get("detection") or {}
    controls = manifest.get("controls") or {}
    settings = manifest.get("settings") or {}
    text = (manifest.get("inputs") or {}).get("text") or {}
    return Inputs(
        controls=int(controls.get("n") or 0), controls_reason=str(controls.get("reason")
                                                                 or ""),
        prefix=_pair(ex.get("text"), ex.get("control")),
        recap=_pair((rg.get("text") or {}).get("final"),
                    (rg.get("control") or {}).get("final")),
        null=_null((ex.get("text") or {}).get("null"), settings.get("null_model")),
        null_model=settings.get("null_model"), detectors=_detectors(det),
        detector_p={p: det["detectors"][p].get("p_value") for p in det.get("primary", [])},
        shift_warnings=list(det.get("shift_warnings") or []),
        blind=Blind.model_validate(det["blind"]) if det.get("blind") else None,
        text_passages=int(text.get("passages") or 0), incomplete=_incomplete(model))
