"""Tracing generations back to a training corpus (propme-simpletrace.md, NOTES.md).

- :mod:`~recitation.trace.formats`: infini-gram's index files, and recitation's manifest;
- :mod:`~recitation.trace.sources`: corpora to index (JSONL, plain-text folders, KJV);
- :mod:`~recitation.trace.build`: ``recitation index build``, suffix arrays in process
  (pydivsufsort), sharded, sizes validated;
- :mod:`~recitation.trace.engine`: the query layer (count, find, document windows, the
  maximal-span primitive) and its memory-mapped numpy engine;
  :mod:`~recitation.trace.infinigram`: the infini-gram engine behind the same protocol;
  :mod:`~recitation.trace.index`: opening an index with either;
- :mod:`~recitation.trace.simpletrace`: SimpleTrace's maximal spans, rarity filter, document
  retrieval with match tiers and merging; :mod:`~recitation.trace.metrics`: its aggregate
  metrics (ALS, FMR, NVR, ...); :mod:`~recitation.trace.validate`: the paper's validation;
  :mod:`~recitation.trace.units`: a generation's words, boundaries and sentence ends;
- :mod:`~recitation.trace.job`: the ``trace`` job (the ``simpletrace`` tracer);
  :mod:`~recitation.trace.propme`, :mod:`~recitation.trace.propme_job`: PROPME's prompt sets,
  the ``propme`` job and the propensity transform;
- :mod:`~recitation.trace.cli`: ``recitation index``, ``recitation trace``,
  ``recitation propme``.

Definitions: docs/tracing.md.
"""
