"""Benchmarks that measure the toolkit's methods where the truth is known.

- :mod:`recitation.bench.groundtruth` runs every detector and extractor on each checkpoint of
  the model organism (:mod:`recitation.organism`), whose members, doses and non-members are
  known (``recitation bench groundtruth``);
- :mod:`recitation.bench.analysis` turns the stored records into the benchmark's tables
  (ROC AUC and TPR at low FPR with bootstrap intervals, per method x epoch x dose; the
  length-only baseline; extraction shares; costs; the LOSS / PEARL overlap of pearl-v2
  table 4).

This package sits above the run machinery (it creates and executes runs like a command) and
below nothing but the command line.
"""
