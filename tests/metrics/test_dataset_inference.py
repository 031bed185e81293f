"""Dataset inference (Maini et al., 2024) against the authors' linear_di.py definitions and
maintained references: their outlier clipping by hand, the fit against torch's Adam from the
same start, the test against scipy, and the error rate on one distribution split in two."""

from __future__ import annotations

import numpy as np
import pytest

from recitation.metrics.dataset_inference import (
    STEPS,
    adam_logistic,
    clip_outliers,
    dataset_inference,
    initial_weights,
)


def test_clipping_is_the_authors_remove_outliers_clip() -> None:
    """linear_di.py: k = int(n * 0.05 / 2); the k lowest take the k-th lowest value, the k
    highest the k-th highest. With n = 100, k = 2; with n = 40, k = 1 and nothing moves."""
    v = np.arange(100, dtype=float)
    v[[7, 50]] = [-1000.0, -500.0]  # the two lowest
    v[[3, 60]] = [900.0, 800.0]  # the two highest
    out = clip_outliers(v)
    assert out[7] == out[50] == -500.0 and out[3] == out[60] == 800.0
    keep = [i for i in range(100) if i not in (3, 7, 50, 60)]
    assert (out[keep] == v[keep]).all()
    w = np.arange(40, dtype=float)
    assert (clip_outliers(w) == w).all()


def test_the_fit_is_torchs_adam_on_bce_from_the_same_start() -> None:
    import torch
    rng = np.random.default_rng(3)
    x = rng.normal(size=(14, 5))
    y = (rng.random(14) < 0.5).astype(float)
    w0 = initial_weights(5, rng)
    ours = adam_logistic(x, y, w0)
    lin = torch.nn.Linear(5, 1).double()
    with torch.no_grad():
        lin.weight.copy_(torch.tensor(w0[:-1]).unsqueeze(0))
        lin.bias.copy_(torch.tensor(w0[-1:]))
    opt = torch.optim.Adam(lin.parameters(), lr=0.01)
    xt, yt = torch.tensor(x), torch.tensor(y)
    for _ in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.BCEWithLogitsLoss()(lin(xt).squeeze(), yt)
        loss.backward()
        opt.step()
    theirs = np.concatenate([lin.weight.detach().numpy()[0], lin.bias.detach().numpy()])
    assert ours == pytest.approx(theirs, abs=1e-9)


def test_separated_sets_give_a_small_p_and_weights_name_the_feature() -> None:
    """The suspect set scores higher on feature a only: p is tiny, and a's weight is the
    largest in size (negative: suspect is label 0)."""
    rng = np.random.default_rng(0)
    suspect = np.column_stack([rng.normal(2.0, 1.0, 40), rng.normal(0, 1, 40)])
    validation = np.column_stack([rng.normal(0.0, 1.0, 40), rng.normal(0, 1, 40)])
    res = dataset_inference(suspect, validation, ["a", "b"], seed=1)
    assert res.p_value < 1e-4 and res.t < 0 and (res.n_suspect, res.n_validation) == (20, 20)
    assert res.weights["a"] < 0 and abs(res.weights["a"]) > abs(res.weights["b"])


def test_one_distribution_split_in_two_is_rejected_at_about_its_level() -> None:
    """200 seeded draws of two sets from one distribution: rejections at 5% within the
    binomial range of 5% (at most 18 of 200: P(X > 18) < 0.05 for X ~ Bin(200, 0.05))."""
    from scipy.stats import binom

    rejected = 0
    for seed in range(200):
        rng = np.random.default_rng(1000 + seed)
        a, b = rng.normal(size=(30, 4)), rng.normal(size=(30, 4))
        rejected += dataset_inference(a, b, list("wxyz"), seed=seed).p_value < 0.05
    assert binom.sf(18, 200, 0.05) < 0.05 and rejected <= 18, rejected


def test_too_few_passages_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 4 passages"):
        dataset_inference(np.zeros((3, 2)), np.zeros((5, 2)), ["a", "b"])
