"""Book memorization probes and the quotation-attribution task on PDNC-format novels
(Michel et al., NAACL 2025: ../shared/papers/quotation-attribution-memorization.md).

- :mod:`.novel`: what every probe reads of a novel folder in PDNC format (title, author,
  characters and aliases, sentences, honorifics, answer parsing); no per-novel code.
- :mod:`.name_cloze`: name cloze (Chang et al. 2023), job ``name_cloze``.
- :mod:`.csg`: Corrupted-Speaker-Guessing (paper section 5, appendix B), job ``csg``.
- :mod:`.quote_attribution`: the downstream task (appendix A), job ``quote_attribution``.
- :mod:`.contamination`: Min-K% on verbalized quotation records (appendix E), job
  ``contamination``.
- :mod:`.analysis`: Spearman correlations, top-5 vs bottom-5 t-tests, propensity-score
  matching and the paired t-test (table 2), from the runs' stores.
"""
