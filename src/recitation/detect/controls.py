"""Built-in member and control sets for auditing on texts with a known answer.

Members
-------
:data:`recitation.corpus.kjv.FAMOUS_PASSAGES`: 20 of the most quoted multi-verse passages of
the King James Bible (public domain), 40-98 words each. Any web-trained model has seen them
many times.

Controls: text the model cannot have seen
-----------------------------------------
A fair control differs from the members *only* in whether the model saw it. Shuffled verses
or modern news fail that test: they differ in fluency, style, vocabulary or length, and a
detector (or a blind baseline that only looks at length or vocabulary) separates them
without any memorization signal. So the controls here are:

* ``KJV_PASTICHE`` — 20 passages in the diction of the King James Bible (thee/thou, -eth
  verbs, "and it came to pass", colon-and-semicolon rhythm), written for recitation in 2026
  and published nowhere else, with the members' length distribution (40-98 words). They are
  new as wholes; their n-grams are of course common, which is the point: a detector must
  find *this text* familiar, not *this style*.
* ``KJV_DEVOTIONAL`` — 20 more passages in the same diction but on the members' subjects
  (God, the LORD, Jesus, faith, love, prayer), written for recitation in 2026. The
  distribution-shift guard showed that ``KJV_PASTICHE`` is separable from famous verses by
  vocabulary alone (bag-of-words AUC 0.95: the famous verses are about God, the pastiche
  about potters and lighthouses); this set closes that gap.
* ``FRESH_CODE`` — 12 Python problems in HumanEval's format (signature, docstring with
  examples, canonical solution), written for recitation in 2026; the controls for HumanEval.

Longer versions for PEARL-length samples (>= 250 words: ``kjv:famous-long`` against
``builtin:kjv-devotional-long``) are in :mod:`recitation.detect.controls_long`.

Both sets are released under the project's license. They are only unseen for models
trained before they were published; for models trained later, write new ones.
"""

from __future__ import annotations

KJV_PASTICHE: tuple[str, ...] = (
    "And it came to pass in the days of the harvest, that the potter went down unto the "
    "river to gather clay; and he found there a vessel that was broken. And he took up the "
    "pieces, and said, Behold, the hand that made thee shall make thee again, and thou shalt "
    "hold water as in the days of thy youth.",

    "Hear, O ye lamplighters of the city, and give ear unto the word that was spoken at the "
    "gate: for the night is long, and the oil is sold by measure. Trim ye your wicks before "
    "the watch is set, and let not the streets of the poor be dark while the houses of the "
    "merchants shine.",

    "The ferryman rose up early in the morning, and the mist lay upon the face of the waters. "
    "And he said unto his son, Take thou the oar, for my arms are weary; I have carried "
    "strangers over this river forty years, and not one of them hath asked my name.",

    "Blessed is the woman that keepeth bees, for her jars shall not be empty in the winter. "
    "She riseth before the sun and walketh among the hives; she speaketh softly, and they "
    "know her voice. Her children eat honey at the table, and her neighbours borrow of her "
    "and are not turned away.",

    "Then came the weavers of the north country, bearing looms upon their backs, and they "
    "pitched their tents by the well of the shepherds. And they wove by day and by night a "
    "cloth of many colours, and the length thereof was seven cubits; and no man of that "
    "land had seen the like of it.",

    "Say not in thine heart, The road is long and I am few in years. For the cedar was once "
    "a seed that a bird let fall, and the wall of the city was laid one stone upon another. "
    "Go thou forward, and count not the miles behind thee.",

    "And the keeper of the lighthouse wrote in his book: On the third night of the storm the "
    "lamp went out, and I was afraid. Yet I struck the flint until my hands bled, and the "
    "flame came again; and in the morning a ship lay at anchor in the bay, whole, with all "
    "her men upon the deck singing.",

    "My son, forget not the counsel of the stonemason: measure twice, and strike once. For "
    "a stone that is cut amiss cannot be made whole, neither can a word be called back when "
    "it is gone out of the mouth. Be thou slow to cut and slow to speak, and thy house shall "
    "stand.",

    "In the year that the river rose above the bridge, there dwelt in the valley a widow "
    "which had two goats and a fig tree. And the waters came into her house, and she went "
    "up upon the roof with her goats; and she sat there three days, and ate of the figs, "
    "and gave thanks. And on the fourth day the waters went down, and her neighbours found "
    "her sleeping in the sun, and the goats sleeping beside her, and the tree was green.",

    "Consider the snow upon the high places, how it lieth still all the winter long and "
    "maketh no sound. Yet when the spring cometh it goeth down into the valleys and "
    "watereth the gardens of them that never saw it fall.",

    "And the clockmaker said unto his apprentice, Why weepest thou? And he answered, Because "
    "the wheel that I have made turneth not. And the clockmaker took the wheel in his hand, "
    "and he filed away a single tooth, and set it again in its place; and the hands of the "
    "clock moved, and the hour was struck.",

    "Woe unto the miller that grindeth with a heavy thumb upon the scale, for the bread of "
    "the orphan is lighter by his hand. The wind that turneth his sails shall one day be "
    "still, and he shall seek flour in the market and find none.",

    "Rejoice, ye gardeners of the hill country, for the frost is past and the ground is "
    "soft. Set ye the beans along the wall and the gourds in the low places, and let the "
    "children carry water from the spring. For the summer shall be long, and the rains "
    "shall come in their season, and there shall be enough for the stranger also.",

    "And there was a scribe in the house of the king that could write with either hand. And "
    "the king said, Write me a letter to the north and a letter to the south at one time. "
    "And he did so, and the letters were alike in every word; and the king marvelled, and "
    "gave him a cloak of blue.",

    "Lift up thine eyes from the furrow, thou that ploughest alone, and behold the birds "
    "that follow after thee. They neither sow nor plough, yet they are fed by thy labour; "
    "so also is thy labour a table for many that thou shalt never see. Therefore be not "
    "weary, neither say that thy work is in vain; for the seed that is hidden in the earth "
    "is not forgotten, and the field that is tilled in sorrow shall be reaped in gladness.",

    "Now the bridge of the old city had nine arches, and under the fifth arch there dwelt a "
    "fiddler. And whosoever passed over the bridge at evening heard his music, and their "
    "burdens were lighter; but none went down to see his face.",

    "The baker's daughter kept the fire through the night, and she fed it with the wood of "
    "the broken cart. And when her father awoke he said, Where is the cart? And she showed "
    "him the loaves upon the board, forty and two, and he said no more.",

    "Be not as the weathercock upon the tower, which turneth with every wind and crieth out "
    "at every gust. Be thou rather as the anchor that lieth in the deep, which no man seeth, "
    "and yet the ship is held.",

    "And it came to pass, when the salt merchants came up out of the desert, that the "
    "people of the town went out to meet them with lamps. And the eldest of the merchants "
    "said, We have walked thirty days, and our camels have drunk but twice; give us water "
    "first, and then we will open our sacks. And the people gave them water, and washed the "
    "feet of the camels, and the merchants opened their sacks and gave salt to every house "
    "without price.",

    "Remember the mapmaker, who drew the rivers and the roads of a country he had never "
    "seen. Men walked by his lines and were not lost, and they blessed his name in far "
    "places; yet he died in the street where he was born.",
)


KJV_DEVOTIONAL: tuple[str, ...] = (
    "Praise ye the LORD, O ye that keep the gates of the morning, for he hath set a lamp "
    "upon the hill of his holiness. His mercy goeth before the sun, and his truth followeth "
    "after it; the night shall not hide his face from them that seek him.",

    "And Jesus went up into a boat with his disciples, and they sat down to mend the nets. "
    "And he said unto them, Why are ye careful for the torn places? The Father which is in "
    "heaven knoweth every cord thereof, and he shall bind up that which is broken, that not "
    "one fish of his be lost.",

    "Blessed are they that wait in the dark, for they shall be lifted up in the morning. "
    "Blessed are they that give water to the weary, for the LORD shall be their well in a dry "
    "land. Blessed are they that forgive before they are asked, for their sins are covered "
    "as the sea covereth the stones.",

    "O God, thou art the keeper of my going out and my coming in; thou hast numbered the "
    "hairs of my head and the steps of my feet. Though I lie down in a strange land, thy "
    "hand is under me, and thy spirit is the pillow of my soul.",

    "In the beginning of the year the word of the LORD came unto the prophet, saying, Go "
    "down to the house of the weaver, and there I will shew thee a sign. And he went down, "
    "and behold, the weaver made a garment without seam; and the LORD said, So shall my "
    "people be, one cloth, and no man shall rend it.",

    "Trust not in the strength of thine own arm, neither lean upon the silver of thy "
    "treasury: for the arm groweth weary and the silver is spent. But the LORD is an "
    "everlasting rock, and he that buildeth upon him shall not be moved. The floods shall "
    "come and the winds shall beat upon that house, and it shall stand, for it is founded "
    "upon the word of the LORD.",

    "For God so loved the lowly that he made the grass to grow in the places where no man "
    "walketh, and the lilies to open where no eye beholdeth them. How much more shall he "
    "clothe you, O ye of little faith, whom he hath called by name? Therefore take no "
    "thought for the morrow, but seek ye first his kingdom, and the morrow shall be his.",

    "Now faith is the lamp of them that walk by night, and hope is the oil thereof. Take "
    "heed that the oil fail not, and that the lamp be not hid under a vessel; for the "
    "bridegroom cometh at an hour ye know not, and the door is shut behind them that "
    "tarry.",

    "And the angel of the LORD stood by the well of the shepherds, and said unto the woman "
    "that drew water, Fear not: thy prayer is heard, and thy tears are written in a book. "
    "And she set down her pitcher and worshipped; and when she lifted up her eyes the angel "
    "was gone, and her pitcher was full of wine. And she ran into the city, and told all "
    "that were there; and they went out to the well, and gave glory to God.",

    "Let the heavens declare the patience of the LORD, and the earth shew forth his "
    "longsuffering. He hath not dealt with us after our foolishness, neither hath he "
    "weighed our days in a false balance. As a father waiteth at the door for a son that "
    "is gone into a far country, so waiteth the LORD for the return of his people, and he "
    "runneth to meet them while they are yet a great way off.",

    "Love is not weary, love is not quick to anger; love keepeth no account of wrongs, and "
    "rejoiceth not when the proud are brought low. Love watcheth with the sick, and "
    "breaketh bread with the stranger, and is not ashamed. Love endureth when the "
    "harvest faileth, and singeth when the barns are empty.",

    "Woe unto the shepherd that feedeth himself and leaveth the flock upon the mountains. "
    "Saith the LORD, I will require my sheep at his hand; I myself will seek the lost, and "
    "bring again that which was driven away. I will bind up that which was broken, and "
    "strengthen that which was sick, and I will feed them in a good pasture by the rivers; "
    "and they shall know that I am their God.",

    "Come unto me, saith the LORD, all ye that have laboured in the fields of the stranger, "
    "and I will give you a field of your own. Ye shall plant vineyards and eat the fruit of "
    "them, and your children shall sit under the vine in peace; and none shall make them "
    "afraid, for I the LORD have spoken it.",

    "And it came to pass, as Jesus passed by the gate of the city, that a blind man sat "
    "there making baskets. And he said unto him, What makest thou? And he answered, Lord, I "
    "make baskets that I have never seen. And Jesus said, Thy faith hath seen them; go in "
    "peace.",

    "Sing unto God a song of the evening, for he hath brought us through the heat of the "
    "day. He gave shade unto the labourer and water unto the beast of burden; he remembered "
    "the sparrow in the furrow and the widow at the mill. Let every house kindle a light "
    "and give thanks, for the LORD hath not forgotten the least of these, and his "
    "righteousness endureth unto all generations.",

    "My soul is as a field after the rain, and the LORD walketh in it at evening. He "
    "lifteth up the bruised reed and setteth it upright; he gathereth the scattered seed "
    "and covereth it with earth. In the season thereof it shall spring up, thirty and "
    "sixty and an hundredfold, and the reapers shall sing in the furrows where I wept.",

    "Then said Jesus unto the rich man, Thy barns are full, but thy lamp is empty. Go, open "
    "thy doors unto them that have no bread, and the Father shall fill thy lamp with oil "
    "that no thief can carry away. And the rich man was sorrowful, and went his way; but "
    "in the morning he came again, and the key of his barn was in his hand.",

    "Be still, O my soul, and wait upon God as the watchman waiteth for the dawn. The night "
    "is long, but the morning is sure; and he that made the stars hath not forgotten "
    "thee. He calleth them all by their names, and not one of them faileth; how then shall "
    "he forget the child that crieth unto him in the watches of the night?",

    "And the word of the LORD came unto me in the days of the famine, saying, Son of man, "
    "what seest thou? And I said, I see a field of dry stalks, and a child gleaning among "
    "them. And he said, Behold, out of the hand of this child will I feed a multitude; for "
    "my strength is made perfect in the small things, and the proud shall know that I am "
    "the LORD, when they eat of the bread that the child hath gathered.",

    "Grace be unto you and peace from God our Father, who keepeth the lamps of the "
    "churches burning. Hold fast that which is good, and let your light shine in the "
    "houses of the poor, that they may glorify your Father which is in heaven. Be ye "
    "kind one to another, bearing one another's burdens, and the God of peace shall be "
    "with you always.",
)


def _code(prompt: str, solution: str) -> dict[str, str]:
    return {"prompt": prompt, "canonical_solution": solution}


FRESH_CODE: tuple[dict[str, str], ...] = (
    _code('\n\ndef count_vowel_runs(text: str) -> int:\n    """ Count maximal runs of '
          'consecutive vowels (a, e, i, o, u; case-insensitive) in text.\n    >>> '
          'count_vowel_runs(\'queue\')\n    1\n    >>> count_vowel_runs(\'banana\')\n    3\n'
          '    """\n',
          '    runs = 0\n    inside = False\n    for ch in text.lower():\n        if ch in '
          '"aeiou":\n            if not inside:\n                runs += 1\n            inside '
          '= True\n        else:\n            inside = False\n    return runs\n'),
    _code('from typing import List\n\n\ndef rotate_left(items: List[int], k: int) -> List[int]'
          ':\n    """ Return items rotated k places to the left; k may exceed the length.\n'
          '    >>> rotate_left([1, 2, 3, 4], 1)\n    [2, 3, 4, 1]\n    >>> rotate_left([1, 2'
          '], 5)\n    [2, 1]\n    """\n',
          '    if not items:\n        return []\n    k %= len(items)\n    return items[k:] + '
          'items[:k]\n'),
    _code('\n\ndef is_staircase(n: int) -> bool:\n    """ Return True if the decimal digits of '
          'n, read left to right, each differ\n    from the previous one by exactly one.\n'
          '    >>> is_staircase(1232)\n    True\n    >>> is_staircase(135)\n    False\n    '
          '"""\n',
          '    digits = [int(d) for d in str(abs(n))]\n    return all(abs(a - b) == 1 for a, b '
          'in zip(digits, digits[1:]))\n'),
    _code('from typing import List\n\n\ndef running_maximum(values: List[int]) -> List[int]:\n'
          '    """ For each position, the largest value seen so far.\n    >>> '
          'running_maximum([3, 1, 4, 1, 5])\n    [3, 3, 4, 4, 5]\n    """\n',
          '    out = []\n    best = None\n    for v in values:\n        best = v if best is '
          'None else max(best, v)\n        out.append(best)\n    return out\n'),
    _code('\n\ndef mirror_case(word: str) -> str:\n    """ Upper-case the letters in the first '
          'half of word and lower-case the rest;\n    the middle letter of an odd-length word '
          'stays as it is.\n    >>> mirror_case(\'garden\')\n    \'GARden\'\n    >>> '
          'mirror_case(\'river\')\n    \'RIver\'\n    """\n',
          '    n = len(word)\n    half = n // 2\n    middle = word[half] if n % 2 else ""\n'
          '    rest = word[half + 1:] if n % 2 else word[half:]\n    return word[:half].upper()'
          ' + middle + rest.lower()\n'),
    _code('from typing import Dict, List\n\n\ndef group_by_length(words: List[str]) -> Dict[int, '
          'List[str]]:\n    """ Group words by their length, keeping the input order inside '
          'each group.\n    >>> group_by_length([\'ox\', \'cat\', \'by\'])\n    {2: [\'ox\', '
          '\'by\'], 3: [\'cat\']}\n    """\n',
          '    groups: Dict[int, List[str]] = {}\n    for w in words:\n        groups.setdefault'
          '(len(w), []).append(w)\n    return groups\n'),
    _code('\n\ndef lamp_toggles(n: int, presses: int) -> int:\n    """ n lamps start off. On '
          'press i (1-based) every i-th lamp is toggled.\n    Return how many lamps are on '
          'after the given number of presses.\n    >>> lamp_toggles(10, 10)\n    3\n    >>> '
          'lamp_toggles(5, 1)\n    5\n    """\n',
          '    lamps = [False] * n\n    for i in range(1, presses + 1):\n        for j in range('
          'i - 1, n, i):\n            lamps[j] = not lamps[j]\n    return sum(lamps)\n'),
    _code('\n\ndef strip_comment(line: str) -> str:\n    """ Remove a trailing # comment from a '
          'line of code, but not a # inside\n    single or double quotes; trailing spaces are '
          'removed too.\n    >>> strip_comment(\'x = 1  # one\')\n    \'x = 1\'\n    >>> '
          'strip_comment(\'s = "#"\')\n    \'s = "#"\'\n    """\n',
          '    quote = None\n    for i, ch in enumerate(line):\n        if quote:\n            '
          'if ch == quote:\n                quote = None\n        elif ch in "\'\\"":\n'
          '            quote = ch\n        elif ch == "#":\n            return line[:i].rstrip'
          '()\n    return line.rstrip()\n'),
    _code('from typing import List, Tuple\n\n\ndef closest_pair_gap(points: List[int]) -> '
          'Tuple[int, int]:\n    """ Return the two values (smaller first) whose difference is '
          'smallest;\n    ties go to the pair that comes first in sorted order.\n    >>> '
          'closest_pair_gap([9, 1, 4, 7])\n    (7, 9)\n    """\n',
          '    s = sorted(points)\n    best = min(range(len(s) - 1), key=lambda i: s[i + 1] - s'
          '[i])\n    return s[best], s[best + 1]\n'),
    _code('\n\ndef spell_digits(n: int) -> str:\n    """ Spell the digits of a non-negative '
          'integer as lower-case English words\n    joined by hyphens.\n    >>> spell_digits'
          '(407)\n    \'four-zero-seven\'\n    """\n',
          '    names = "zero one two three four five six seven eight nine".split()\n    return '
          '"-".join(names[int(d)] for d in str(n))\n'),
    _code('from typing import List\n\n\ndef water_levels(heights: List[int]) -> int:\n    '
          '""" Heights of walls of width one stand in a row. Return how many\n    units of '
          'rain stay between them.\n    >>> water_levels([3, 0, 2, 0, 4])\n    7\n    """\n',
          '    left, right = 0, len(heights) - 1\n    best_l = best_r = total = 0\n    while '
          'left < right:\n        if heights[left] < heights[right]:\n            best_l = max'
          '(best_l, heights[left])\n            total += best_l - heights[left]\n            '
          'left += 1\n        else:\n            best_r = max(best_r, heights[right])\n       '
          '     total += best_r - heights[right]\n            right -= 1\n    return total\n'),
    _code('\n\ndef weekday_after(day: str, n: int) -> str:\n    """ Return the English weekday '
          'name n days after day (n may be negative).\n    >>> weekday_after(\'Friday\', 3)\n'
          '    \'Monday\'\n    """\n',
          '    days = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", '
          '"Sunday"]\n    return days[(days.index(day) + n) % 7]\n'),
)
