"""Token signals computed once per (model, text): :mod:`recitation.signals.store`."""
