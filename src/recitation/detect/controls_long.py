"""Long member and control sets (>= 250 words per item) for PEARL-length audits.

PEARL's published samples have a median near 260 words; the short sets of
:mod:`recitation.detect.controls` (40-98 words) sit at NCD's noise floor. These sets are the
same design at that length (``kjv:famous-long`` vs ``builtin:kjv-devotional-long``):

Members
-------
:data:`recitation.corpus.kjv.FAMOUS_PASSAGES_LONG`: 20 famous King James passages (public
domain), whole chapters where the chapter is 250-420 words (Psalms 19, 27, 51, 91, 103, 139,
Isaiah 53, 1 Corinthians 13) and the best-known whole paragraph of longer chapters otherwise
(Genesis 1:1-13, Exodus 20:1-17, Ecclesiastes 3:1-15, Isaiah 40:21-31, Matthew 5:1-16,
Matthew 6:19-34, Luke 2:1-20, John 1:1-18, John 14:1-14, Romans 8:28-39, Hebrews 11:1-12, 1
John 4:7-21): 270-414 words, mean 325, median 321.

Controls
--------
``KJV_DEVOTIONAL_LONG``: 20 passages in King James diction on the members' subjects and in
their genres (creation, law, psalms of the word, trust, repentance, protection, praise and
providence, wisdom, prophecy, gospel discourse and narrative, epistles on tribulation, love,
faith and kindness), written for recitation in 2026 and published nowhere else: 275-402
words, mean 323, median 313 (Kolmogorov-Smirnov p = 0.98 against the members' lengths).
They are original compositions, not paraphrases: drafts that echoed a member's wording or
structure (e.g. "I go to prepare a place", "keep back thy servant", "six days shalt thou
labour") were rewritten, and no control shares a 5-word sequence with a member beyond stock
phrases ("and it came to pass", "verily I say unto you"), and none shares 11 words in a
row with any verse of the KJV (tests/detect/test_controls_long.py checks both).

Shift guard (``calibrate.shift_guard``, members vs these controls, seed 0): length AUC 0.52
(p = 0.85), date tokens 0.52, bag-of-words 5-fold CV 0.68 (p = 0.17; 0.65-0.71 over seeds
0-3, p 0.16-0.34) - no significant shift. A first draft was separable by vocabulary alone
(bag-of-words AUC 1.00: concrete words such as lamp, bread, gate, morning, road against the
members' God, earth, life, righteousness, even, known); the vocabulary was revised until the
guard stopped separating them. Long texts make a vocabulary classifier stronger than on the
short sets, so re-run the guard whenever either set changes.

**The blind baseline separates them** (:mod:`recitation.detect.blind`, word 1- and 2-grams,
2026-11-28): AUC 0.82 [0.65, 0.94] at seed 0 (0.82-0.86 over seeds 0-3), on function-word
pairs ('on the', 'and to', 'by the', 'and the', 'and they', 'not the'). The controls imitate
the verses' vocabulary but not their phrasing, so an audit of the famous passages against
them does not count the detectors (reproduction still counts) until the texts are rewritten
to match the members' function-word pairs.

The texts are package data (``recitation/data/controls/kjv_devotional_long.txt``, a passage
per paragraph). Released under the project's license. Unseen only for models trained before
they were published; for later models, write new ones.
"""

from __future__ import annotations

from recitation.detect.controls import passages

MIN_WORDS = 250

KJV_DEVOTIONAL_LONG: tuple[str, ...] = passages("kjv_devotional_long.txt")
