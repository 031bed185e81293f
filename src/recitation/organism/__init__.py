"""The model organism: SmolLM2 fine-tuned on known passages, the toolkit's positive control.

Members and non-members are consecutive passages of the same public-domain novels (PDNC),
split at random; members are repeated 1, 4 and 16 times (their dose) in training, and a
checkpoint is kept per epoch (epoch 0 = the base model). See docs/organism.md.

- :func:`recitation.organism.build.build_organism` builds (or reuses) one;
- :func:`recitation.organism.paths.organism_checkpoint` resolves ``epoch3`` /
  ``quick:epoch2`` to a transformers directory; every command takes the model spec
  ``organism:epoch3`` / ``organism:quick:epoch2`` (the local backend looks this module up by
  name), and :func:`recitation.organism.paths.checkpoint_identity` gives the checkpoint's
  identity for the response cache;
- :mod:`recitation.organism.measure` checks what a checkpoint has memorized, per dose.
"""
