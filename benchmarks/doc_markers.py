"""Write a benchmark's table into a doc between its markers (the benchmarks that keep a
table in docs/ share this): ``<!-- NAME:start -->`` ... ``<!-- NAME:end -->``
(:mod:`recitation.bench.markers`, where ``recitation bench`` commands find it too)."""

from __future__ import annotations

from recitation.bench.markers import write_between

__all__ = ["write_between"]
