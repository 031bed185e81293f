"""Scores of a model output against a reference, one algorithm per module.

:mod:`.rouge` (ROUGE-L equal to rouge-score), :mod:`.edit` (HELM: longest common prefix,
Levenshtein, edit similarity), :mod:`.ncd` (normalized compression distance),
:mod:`.spans` (verbatim passages, RECAP-compatible and de-duplicated), :mod:`.weighted`
(RECAP eq. 2 and bootstrap group means), :mod:`.stats` (ROC AUC, TPR at FPR, thresholds,
bootstrap intervals, t-tests, Spearman).
"""
