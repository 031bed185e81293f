"""Extraction attacks: RECAP (Duarte et al.) and its baselines, prefix probing. See
docs/extraction.md (PROPME, capability against propensity, is :mod:`recitation.trace.propme`).

Paper terms (RECAP section / appendix) and where they live:

* **event summaries** (§3.1): the book cut into events, each with a title, characters, a
  paraphrased bullet summary and verbatim first/last sentences - :mod:`.summary`
  (:class:`~recitation.corpus.model.Event` holds them);
* **section summary agent** (§3.1, appendix B): the helper that writes them -
  :mod:`.summary`, prompt in :mod:`.prompts` (section B);
* **extraction agent** (§3.2, appendix D) / **DSP**, dynamic soft prompting (§4.2, Wang et
  al. 2024): the target asked to write an event from its summary - :mod:`.agents` (stage 2), prompt
  :func:`.prompts.extraction_messages`;
* **verbatim verifier** / **refusal detection** (§3.3, appendix E): the LLM judge plus
  refusal keywords - :mod:`.verifier`, prompt in :mod:`.prompts` (section E);
* **jailbreak** (§3.4, appendix F): the static function-call prompt and our opt-in variants
  for refused attempts - :mod:`.agents` (stage 4), :func:`.prompts.jailbreak_messages`;
* **feedback agent** and **refinement rounds** (§3.5, appendix G): hints from the helper and
  up to five refinements kept only when ROUGE-L improves - :mod:`.agents` (stage 5),
  :func:`.prompts.feedback_messages`; hints checked for copied gold text by :mod:`.leak`;
* **filter** / **parrot** (§3.6, appendix H): the hybrid memorization score (a masked-LM
  "parrot" trained on the book, ROUGE-L, embedding cosine) that decides which events get
  feedback - :mod:`.filter`;
* **prefix probing** (§4.2, baselines): the first sentence and the title -
  :mod:`.agents` (stage 1, inside a RECAP run), :mod:`.prefix_probe` (the standalone
  ``prefix_probe`` job on KJV or JSONL passages);
* **ROUGE-L** (§4.1, the headline metric, weighted by passage length per book):
  :mod:`recitation.metrics.rouge`, book-level scores in :mod:`recitation.evaluate.scoring`;
* **40-token passages** (§4.1, verbatim passages with up to 5 mismatches; appendix R):
  :mod:`recitation.metrics.spans`, counted per book by :mod:`recitation.evaluate.scoring`;
* per-method **cost** (appendix T): :mod:`.records`.

Also: :mod:`.job` (the ``extract`` run job), :mod:`.report` (EchoTrace file and summary),
:mod:`.replay` (the released runs replayed through our pipeline), :mod:`.cli`
(``recitation extract``).
"""
