"""Membership detection: PEARL perturbation sensitivity, white-box membership scores, and
verdicts calibrated on controls. See docs/detection.md.

Modules: :mod:`.perturb` (seeded perturbations), :mod:`.wordnet` (offline synonyms),
:mod:`.pearl` (sensitivity, GFD, S_M; tasks and call planning), :mod:`.whitebox` (LOSS,
zlib, lowercase, Min-K%, Min-K%++, reference), :mod:`.recall` (ReCaLL), :mod:`.dcpdd`
(DC-PDD), :mod:`.calibrate` (FPR curve, threshold at a
target FPR, verdicts, labelled metrics, shift guard), :mod:`.samples` / :mod:`.controls`
(sources and built-in unseen controls), :mod:`.job` (the ``detect`` run job),
:mod:`.report` (report, run-store finalization, call estimates), :mod:`.cli`.
"""

from __future__ import annotations

from recitation.detect.calibrate import (
    Calibration,
    calibrate,
    fpr_curve,
    labelled_metrics,
    shift_guard,
    verdicts,
)
from recitation.detect.pearl import (
    expected_positive_drop,
    generalization_failure_density,
    sensitivity,
)
from recitation.detect.perturb import (
    bit_flip,
    case_flip,
    char_swap,
    flip_token_bits,
    get_perturbation,
    synonym_substitute,
    whitespace,
)
from recitation.detect.samples import Sample, load_samples
from recitation.detect.whitebox import (
    DetectorScore,
    min_k_percent,
    min_k_plus_plus,
    whitebox_scores,
)

__all__ = [
    "Calibration", "DetectorScore", "Sample", "bit_flip", "calibrate", "case_flip",
    "char_swap", "expected_positive_drop", "flip_token_bits", "fpr_curve",
    "generalization_failure_density", "get_perturbation", "labelled_metrics", "load_samples",
    "min_k_percent", "min_k_plus_plus", "sensitivity", "shift_guard", "synonym_substitute",
    "verdicts", "whitebox_scores", "whitespace",
]
