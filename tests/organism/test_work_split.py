"""The whole-work organism's data (organism/work.py): the work cut at a chapter end, windows
that cover every token and overlap at every join, each a member at dose 1; and the fields it
added leave every earlier organism's fingerprint as it was (so none is rebuilt)."""

from __future__ import annotations

import pytest

from recitation.errors import ConfigError
from recitation.organism.config import BOOK, BOOK_QUICK, DEFAULT, LOWFPR, QUICK, make_config
from recitation.organism.data import Novel
from recitation.organism.work import windows, work_passages, work_text

TEXT = "CHAPTER I.\n\n" + " ".join(f"a{i}" for i in range(50)) + "\n\n\nCHAPTER II.\n\n" + \
    " ".join(f"b{i}" for i in range(40)) + "\n\n\nCHAPTER III.\n\n" + \
    " ".join(f"c{i}" for i in range(30)) + "\n"
NOVELS = [Novel("Other", "x y z"), Novel("Work", TEXT)]


def _cfg(**kw: object):  # type: ignore[no-untyped-def]
    return make_config(preset="book-quick", work="Work", **kw)


@pytest.mark.parametrize(("words", "ends_with"), [(0, "c29\n"), (10, "a49\n"), (60, "b39\n"),
                                                  (500, "c29\n")])
def test_the_work_ends_at_a_chapter_end(words: int, ends_with: str) -> None:
    _, text = work_text(_cfg(work_words=words), NOVELS)
    assert text.endswith(ends_with) and text.startswith("CHAPTER I.")


def test_an_unknown_work_names_the_novels() -> None:
    with pytest.raises(ConfigError, match="no PDNC novel 'Nope'.*Other, Work"):
        work_text(make_config(preset="book-quick", work="Nope"), NOVELS)


@pytest.mark.parametrize(("n", "length", "stride"), [(1000, 256, 192), (256, 256, 192),
                                                     (100, 256, 192), (700, 100, 100),
                                                     (701, 100, 75)])
def test_windows_cover_every_token_and_overlap_at_every_join(n: int, length: int,
                                                             stride: int) -> None:
    ws = windows(n, length, stride)
    covered = {t for a, b in ws for t in range(a, b)}
    assert covered == set(range(n))
    assert all(b - a == min(length, n) for a, b in ws)
    assert all(a2 < b1 or stride == length
               for (_, b1), (a2, _) in zip(ws, ws[1:], strict=False))


def test_every_window_is_a_member_at_dose_one() -> None:
    def offsets(text: str) -> list[tuple[int, int]]:  # one token per word
        import re

        return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]

    cfg = _cfg(work_words=0, passage_tokens=32, stride_tokens=24)
    ps = work_passages(cfg, NOVELS, offsets, lambda t: len(t.split()))
    assert all(p.member and p.dose == 1 and p.novel == "Work" for p in ps)
    assert ps[0].text.startswith("CHAPTER I.") and ps[-1].text.endswith("c29")
    assert [p.n_tokens for p in ps] == [32] * len(ps)


def test_earlier_organisms_keep_their_fingerprints() -> None:
    for cfg in (DEFAULT, QUICK, LOWFPR):
        fields = cfg.fingerprint_fields()
        assert not {"work", "work_words", "stride_tokens", "keep_epochs"} & set(fields)
    assert BOOK.fingerprint_fields()["keep_epochs"] == [1, 4, 16]
    assert BOOK_QUICK.fingerprint_fields()["work_words"] == 900
