"""The verdict: the one place that decides what an audit concludes about a model.

:func:`decide` takes typed :class:`Inputs` (the report builds them from the audit's records:
:mod:`recitation.report.verdict_inputs`) and returns a typed :class:`Finding` (verdict,
evidence kind, error rate, the rule that fired, the numbers behind it, why there is none);
every format (console, HTML, Markdown, JSON, ``compare``) renders that one object. What must
not drift after an audit is created (primary scores, the verbatim rule, the rules' version)
is pinned in its manifest (:mod:`recitation.verdict.pins`).
"""

from recitation.verdict.decide import ALPHA, RULES, RULES_VERSION, decide
from recitation.verdict.types import Blind, Counts, Detector, Finding, Inputs, Null, NullSpan

__all__ = ["ALPHA", "RULES", "RULES_VERSION", "Blind", "Counts", "Detector", "Finding", "Inputs",
           "Null", "NullSpan", "decide"]
