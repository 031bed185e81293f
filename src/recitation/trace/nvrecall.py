"""Near-verbatim recall as SimpleTrace uses it: :mod:`recitation.metrics.nvrecall` (the
PROPME authors' definition), named here for the tracing modules and their tests."""

from recitation.metrics.nvrecall import NVR, Thresholds, clamp, nv_recall, round_half_up, words

__all__ = ["NVR", "Thresholds", "clamp", "nv_recall", "round_half_up", "words"]
