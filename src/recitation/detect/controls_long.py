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

Released under the project's license. Unseen only for models trained before they were
published; for later models, write new ones.
"""

from __future__ import annotations

MIN_WORDS = 250

KJV_DEVOTIONAL_LONG: tuple[str, ...] = (
    # the making of the springs and the high places (creation)
    "Before the mountains were settled in their places, the LORD God went forth over all the "
    "earth, and the waters knew not their bounds. And God spake unto the waters, saying, Go ye "
    "through the valleys which I shall cut for you, and sing as ye go; and the waters heard his "
    "voice, and obeyed. And God made springs in the high places, and set a cup of stone under "
    "every spring, that every beast of the earth might drink in the heat of the day: and it "
    "pleased the LORD. Then the LORD took of the dust of the low places and spread it upon the "
    "rocks, and said, Cover thou the rock, that the cedar and the fir may take hold thereon; "
    "and the dust obeyed, and the roots thereof took hold of the clefts, and the high places "
    "were clothed. And God set the moon to rule over the tides, and he gave unto the sea a "
    "voice, that it should cry unto the shore continually, and make known his power unto all "
    "that dwell in the isles. And God set the frost upon the high places, and the sun loosed it "
    "in its season; and all things kept the time which he had appointed them, because he is "
    "perfect in knowledge, and there is no evil in his works. Then the LORD rested on the "
    "mountain of the east, and beheld the rivers running in their courses, and the grass moving "
    "on the face of the earth; and he blessed them, and said, Keep ye your courses, and be ye a "
    "witness of my righteousness unto them that shall be born in the generations to come, that "
    "they may say, Who is like unto the LORD, that made all these? Even so were the heavens and "
    "the earth established, and there was nothing in them that was not known unto him.",

    # statutes given at the wells (law)
    "And the LORD spake unto the elders of the people in the valley of the wells, saying, These "
    "are the statutes and the judgments which ye shall do in the land whither I bring you, that "
    "it may be well with you. Thou shalt not plough over the furrow that divideth thee from thy "
    "neighbour, neither shalt thou say, It was always so. Thou shalt not sell by a false weight "
    "unto the widow, or give short measure unto the child that is sent to buy; for I am holy, "
    "and by me are all things weighed. Thou shalt not spread an evil report of the stranger, "
    "neither shalt thou sell the judgment of the poor for silver. Thou shalt not curse the "
    "labourer in thine heart in the time of his rest, neither shalt thou keep back his hire "
    "till the morrow; for ye also were servants, and I heard you. Ye shall not hew down the "
    "olive tree of your fathers; it is a gift unto the generations after you. Ye shall leave "
    "drink in the trough for the beasts of the stranger, and ye shall not drive away the bird "
    "that nesteth in the roof. If thou findest a straying lamb in the field, thou shalt keep it "
    "for the owner; and if no man seek it, it shall be thine. When the harvest is gathered, ye "
    "shall keep a feast together, the rich man with the poor, and ye shall speak of my works "
    "and of my righteousness. Ye shall teach these words unto your sons and unto your "
    "daughters, and ye shall put them in your mouth continually, that ye forget not the LORD "
    "your God, which fed you in the wilderness. And all the people answered with one voice, The "
    "word of the LORD is good; we will do it. And the elders wrote the statutes upon a stone, "
    "and they set it by the well; and it is there unto this day.",

    # the rivers bear witness of God (psalm of the word)
    "The rivers run to the sea and bear witness of the faithfulness of God; they are never "
    "weary, and the sea is filled with their praise. The snow on the mountains is his "
    "storehouse, and the showers are his gift unto the poor. He speaketh unto the day, and it "
    "is known in all the earth; he biddeth the evening, and it falleth on the earth. The word "
    "of the LORD is a river that runneth in a dry land: it turneth the desert into a garden, "
    "and the wilderness into a place of springs. His testimonies are a light unto the ignorant, "
    "and his judgments are life unto them that keep them; they give knowledge to the young, and "
    "rest to the weary soul. The fool thinketh, The rivers run of themselves; but the wise man "
    "drinketh, and giveth thanks. The goats on the high rocks descend to the brooks in the "
    "evening, and the LORD numbereth them; the deer in the forest lifteth up his head by the "
    "sound of the brook, and is glad. So is the soul of thy servant when he heareth thy word. "
    "Teach me thy ways, O LORD, as the river knoweth his course; let me not turn aside into the "
    "marsh, nor perish among the reeds, because of my sins. Make me to run in the path of thy "
    "precepts, and let my going be a song in the earth. Guard me also from pride and from all "
    "evil, that it be not a stone in the midst of my stream; yea, wash thou my heart from "
    "hidden sins. Let my thoughts be clear as the water of the spring, and my speech as the dew "
    "upon the vineyards; for thou art my fountain, O God, and in thee is my rest.",

    # a lantern in the dark path (psalm of trust)
    "O LORD, thou art my lantern in the dark path, and my staff on the steep hill. When the "
    "wicked lay wait in the narrow places, and the wolves cry upon the ridges, I will not turn "
    "aside; for thou walkest before me, and thy truth is on the stones of the path. They that "
    "hate me have digged a pit in the path, and covered it with branches; but thou hast shewed "
    "it me, and I have gone round about it. I will sing of thy mercy in the morning, and of thy "
    "faithfulness in the evening, because thou didst help me. If the storm beat on my tent and "
    "the frost entereth my bones, I call to mind thy goodness, and my heart is warm within me; "
    "for thou hast seen all the miles of my wandering, and not one of my sorrows is hid from "
    "thee. Answer me when I cry, O God of my life: be not silent toward me in the day of my "
    "weariness. Guide my feet, that I stumble not at any thing. My strength had failed me, but "
    "I remembered thy works of old: how thou didst lead our fathers through the sea, and feed "
    "them in the desert, and bring them to a land of brooks. Therefore will I wait upon thee as "
    "the watchman waiteth for the dawning; I will not be confounded, for thou hast not forsaken "
    "them that seek thee. Even so, O my soul, be still, and look for the LORD; he is not slack, "
    "and thou shalt yet sit under thine own vine and praise him in the congregation of the "
    "saints; for who is a God like unto our God, that forsaketh not his own?",

    # a wanderer from the fold (psalm of repentance)
    "Incline thine ear unto me, O LORD, for I have wandered from thy fold, and the thorns have "
    "torn me. I thought in my heart, I know the way; and I followed after mine own eyes, and "
    "they brought me to the edge of the pit. Mine iniquity is heavy upon my shoulders, and my "
    "folly is known to all, as a crier in the street. I have done evil in the sight of my "
    "brother, and uttered a lie in the midst of the congregation; I have eaten that which was "
    "not mine, and called it my portion. Now is my face covered with shame; I dare not lift up "
    "mine eyes unto heaven. But thou, O LORD, art slow to anger, and thy mercy is greater than "
    "my wandering. Seek me out, for I cannot find the path; bear me up, for my feet are "
    "wounded. I am as a candle that is gone out; kindle me anew, O God, with a coal from thine "
    "altar. Root out the thorns that I have sown, and quicken my spirit, and plant therein a "
    "vine of thy choosing. Then shall I repair to my brother and make restitution, and I shall "
    "stand before the elders and tell the truth; and they that beheld my sin shall see thy "
    "mercy, and they shall turn also. For the LORD seeketh not the gifts of the hand, but the "
    "turning of the feet. Let not my former ways stand up against me, nor the counsels of my "
    "pride; remember me according to thy goodness, O thou that keepest the flock of Israel. "
    "Then will I dwell in thy fold all my days, and I will not wander more; and I will teach "
    "the lambs of thy pasture to know the voice of the shepherd.",

    # the LORD a fence and a covering (psalm of protection)
    "He that keepeth the way of the LORD shall dwell in safety, and the darkness shall be unto "
    "him as the noonday. The Almighty is a fence about him in the field, and a covering over "
    "him in the storm; he is a well unto him in the dry season, and a comfort in the house of "
    "mourning. Though the hail smite the vineyards, and the locust devour the barley, he shall "
    "not want; for the LORD hath laid up store for him in a place that no enemy knoweth. The "
    "thief in the midnight shall find thy door barred, and the fever of summer shall pass thee "
    "by; for the LORD is a watchman that slumbereth not. An host shall pass by thy door, and "
    "they shall not turn in; the sword shall be drawn in the street, and it shall not cross thy "
    "threshold, because the LORD is there. His faithfulness shall be thy cloak in the winter, "
    "and his word a tent in the heat of the day. If thou pass through the river it shall not "
    "carry thee away, and when thou walkest among the thorns they shall not tear thee. Because "
    "thou hast called on his name in the day of small things, he will hear thee in the day of "
    "great trouble. He will hold thee when thou fallest, and lift thee up when thou faintest; "
    "he will be with thee in a far country, and bring thee back in peace; for his strength is "
    "everlasting, and his arm faileth not. I have watched the seasons turn these many years, "
    "and I have not seen the LORD forget any house that calleth upon him.",

    # sing, O my heart (psalm of praise)
    "Sing, O my heart, unto the God of my days, and let all my bones give thanks unto his name. "
    "He found me in the ditch and set me on the path; he found me hungry and fed me; he found "
    "me naked and put a garment upon me, and he asked no price. He beareth long with the "
    "froward and dealeth gently with the weak; he writeth our sins in the sand, and the tide "
    "covereth it. As the shepherd counteth his sheep in the evening and will not rest before "
    "the last be gathered, so the LORD numbereth them that love him, and not one is forgotten. "
    "He comforteth the grief that no neighbour knoweth, and he seeth the tears that are shed in "
    "secret. Our days are as the smoke of a fire of thorns, which riseth and is gone; but the "
    "goodness of the LORD is as the mountains that are round about, and it abideth. He hath set "
    "his throne above the clouds, yet he stoopeth to hear the sparrow; he ruleth the nations, "
    "yet he knoweth the name of the beggar by the door; for great is the LORD, and there is "
    "none like him. Praise him, ye angels of his presence; praise him, ye stars of the morning, "
    "that hold your courses; praise him, ye winds that carry the rain, ye reapers in the field "
    "and ye grinders by the mill. Praise him, ye that are full of days and have known his "
    "works, and ye that are young and shall see greater. Let the sick praise him on the bed of "
    "affliction, and the prisoner in the house of bondage, for he hath not forgotten them. Let "
    "all the cities of the earth give thanks unto the LORD; for his goodness is upon all that "
    "he hath made, and his truth from generation to generation. Sing, O my heart, unto the God "
    "of my days.",

    # the paths of my days (psalm of providence)
    "I lifted up mine eyes in the beginning of my days, and I cried, Who shall lead me through "
    "this land? For the paths were many, and I understood not the end of any of them. And the "
    "LORD answered me out of the stillness, I have walked every path before thee, and I have "
    "set a stone by each turning. In the time that I went into Egypt to buy corn, the LORD was "
    "a cloud over my camels; and as I returned through the wilderness, he was a spring in the "
    "rock. I numbered my flocks and found them fewer, and I was afraid; but he numbered my days "
    "and found them full, and he was not afraid. Thou knewest the name of my son before his "
    "mother called him; thou knewest the grief of my daughter before she wept. My thoughts are "
    "not hidden from thee; they are as fish in a clear pool, and thou seest them all. My sins "
    "also are before thee; yet thou hast not written them on the walls of the city, but thou "
    "hast covered them as snow covereth the furrows. If I spake foolishly in the council of the "
    "elders, thou wast grieved; if I kept silence and was wise, thou wast glad. Thy mercy "
    "followeth after me as a dog followeth his master; and thy patience is swifter than my "
    "wandering. In the cities of the merchants thy law is written in their gates; among the "
    "fishermen of the sea thy wonders are in their nets. The lions of the thicket hunger, and "
    "thou feedest them; the ravens cry in the cedars, and thou hearest them; how much more wilt "
    "thou hear the children of men that call upon thy name? Thou hast woven my life as a "
    "garment, the warp thereof by day and the woof thereof by night; and thou wilt not cut the "
    "thread before the pattern be perfect. Therefore I will not be troubled by the turning of "
    "the paths, nor by the length of the journey; I will lie down in the inn of the stranger "
    "and sleep, for thou art awake. Keep me, O LORD, in the way of thy choosing, and when my "
    "hair is white, leave me not alone; and let me awake in the world to come and behold thy "
    "face.",

    # the sower of many years (wisdom)
    "I considered the labour of the sons of men, and the measure of their days, and I saw that "
    "the hand of God is upon all the works that are done under heaven. One man buildeth a house "
    "of cedar, and his grandson selleth it for a little silver; another planteth an orchard, "
    "and a stranger eateth the fruit thereof. The proud man saith, I have made this, and he "
    "carveth his name upon the lintel; but the rain and the moss are upon it, and in a few "
    "years no man can read it. Then I said in mine heart, What gain is there for a man in all "
    "his toil? And I went out into the field and saw a man of many years sowing, and I asked "
    "him, Why sowest thou, seeing thou shalt not reap? Then he told me, My father sowed and I "
    "reaped; now I sow, and my son shall reap; and God is the Lord of the harvest, who seeth "
    "the whole field. Then I knew that there is no work lost that is done in the fear of God. "
    "The river runneth to the sea and knoweth not why; the bee gathereth honey for a winter it "
    "shall not see; and the righteous man laboureth in hope, and is content. Eat in peace, and "
    "drink thy cup with thanksgiving; be glad with the wife of thy youth and with the friend "
    "that hath not forsaken thee; for these are good things on the earth, and the giver of them "
    "is good. Be not hasty to be rich, nor slow to do good; for riches are as a bird upon the "
    "roof, but mercy is remembered in heaven. This also I have seen, and it is good: that a man "
    "walk humbly and do his work, and leave the end of all unto him that knoweth the beginning; "
    "for God is not hasty, and his counsel standeth for ever.",

    # the city remembered (prophecy of comfort)
    "Hearken unto me, ye that sit by the rivers of the north, ye whose harps hang silent on the "
    "willows; thus saith the LORD that made the mountains of the east and weigheth the winds in "
    "his hand. Wherefore dost thou complain, O Jacob, The LORD hath forgotten us and our city, "
    "and the walls thereof are broken down for ever? Can a builder forget the house that he "
    "hath builded, or a husbandman the vine that he hath planted with his own hand? Nay, and "
    "the Holy One remembereth the city that he hath founded; behold, the measure of thy walls "
    "is in his hand. I will gather thy stones out of the rubbish, and I will set them again in "
    "their courses; I will make thy doors of oak and thy bars of iron, and thy name shall be "
    "known among the nations, and thy children shall play in thy streets. The young men that "
    "departed weeping shall return with singing, and the elders shall sit again in the place of "
    "judgment. Behold, I will plant vineyards upon the hills that were burned, and the orchards "
    "that the enemy cut down shall bear again; the wells that were stopped shall be opened, and "
    "the women shall sing by the wells. They that are weary of the long journey shall find "
    "springs by the way; and they that are sick by the way shall be carried as a mother "
    "carrieth her child. For I am the LORD, and my counsel standeth; my hand is not spent as "
    "the hand of a man, neither doth mine arm grow heavy. Be not dismayed, therefore, nor let "
    "the hands hang down; for the day of the return is near, and the watchmen shall see it from "
    "the mountains, and all flesh shall know that the mouth of the LORD hath declared it.",

    # the bearer of the light at the gate (prophecy of the rejected servant)
    "Who is this that cometh up from the valley with a light in his hand, walking alone in the "
    "night? He hath no banner before him, and no trumpet soundeth before him; the dogs bark "
    "after him in the villages, and the children hide behind their mothers. He knocked on the "
    "gate of the city, and the keepers would not open; he abode in the dust without, and no man "
    "gave him any thing to eat. Yet he kept his light burning, and he held it up toward the "
    "city, that they which were within might see the way out of their darkness. They mocked him "
    "from the towers, saying, Who asked thee for thy light? and they cast stones, and one of "
    "them struck him, and he bled upon the ground. And the rain came down upon him, and the "
    "wind was bitter, and he had no cloak; yet he sang a song of Zion, that they which were "
    "within might know that he was there, and take heart. But he moved not, neither did he let "
    "the light fall; and in the dawning they found him lying by the gate, and the light still "
    "burning in his hand. Then the watchmen did say one to another, We knew not whom we had "
    "refused; we thought he was a vagabond, and behold, he was sent of God. For in the night "
    "the plague came upon the city, and they that fled by his light were saved, and they that "
    "stayed in the houses of darkness perished. Therefore thus saith the LORD, Because he was "
    "without for them that hated him, and gave his blood for them that threw the stones, I will "
    "exalt him, and his light shall be the glory of the city. Yea, the children that hid from "
    "him shall bring him gifts, and the keepers of the gate shall open unto him with rejoicing. "
    "And the nations afar off shall see the light and draw near unto it; and they shall say, "
    "This is the servant of the LORD, that kept the light for the wicked and did not curse "
    "them. He shall behold the city healed, and his heart shall rejoice; and the city shall be "
    "called by his name for ever.",

    # the mother's candle by the sea (discourse with a parable)
    "And when Jesus saw the multitude standing on the shore, he entered into a fisher's boat, "
    "and taught them, saying, Happy are ye if ye keep a light in the window for them that are "
    "far off; for the darkness shall not overtake them. Happy are ye if ye do good unto him "
    "that cannot repay you, for the Father which is in heaven keepeth the account. The kingdom "
    "of God is like unto a woman whose son went to sea and came not again; and each night she "
    "trimmed the candle and set it in her window toward the water. And her neighbours did say "
    "unto her, Why wastest thou oil? he is drowned. But she answered, If he be alive, he shall "
    "see the light, and know the path to the shore. And the neighbours that had mocked her were "
    "confounded; and they brought oil from their own houses, saying, Let it burn, for we also "
    "have sons upon the sea. And in the seventh year a ship appeared out of the darkness, and "
    "her son was on the deck, and he cried, Mother, I saw thy candle from afar, and I steered "
    "by it. So is the world a dark sea, and many are on it that know not the path. Therefore "
    "keep ye a light for them, that such as are perishing may behold it; be not ashamed of it, "
    "nor put it out if men say evil of you. And whosoever shall keep a light for one that is "
    "perishing, verily I say unto you, he shall see the ship in the haven, and there shall be "
    "joy in heaven.",

    # the two brothers and their barns (discourse on riches and care)
    "Then there came to Jesus a young man that had great possessions, saying, Master, my barns "
    "are full, yet I cannot sleep; for I fear the hail, and the thief, and the years of "
    "drought. And Jesus beholding him saith, Thou art careful about the things that perish, and "
    "thy heart is tied unto them with cords. Hear a parable. There were two brothers that "
    "divided their father's land. The first built a fence about his portion, and set watchmen "
    "on it, and he numbered his sheaves each night by the light of a candle; and his sleep went "
    "from him, and his face was pale with watching. The second opened his doors unto the "
    "gleaners, and ate with the poor, and when the harvest failed his neighbours brought him of "
    "their own; and he laughed with his children in the evening and slept while the sun rose "
    "high. And the years went by, and the fence of the first brother grew high, and the vines "
    "within it grew withered and bare; but the fields of the second were full of children and "
    "of gleaners, and his vines were young. Which of these, thinkest thou, was the richer? And "
    "the young man confessed, He that opened his doors. Jesus said unto him, Thou hast answered "
    "right. Go thou and pull up one stake of thy fence every day, and give one sheaf every day "
    "unto him that asketh; and when the fence is gone thou shalt find that thou needest it not. "
    "Then he turned unto his disciples and said, A fence keepeth out the thief, but it keepeth "
    "out the friend also; and a man that is shut in with his riches is shut in with his fear. "
    "But he that trusteth in God hath a house without a door, and the wind of heaven passeth "
    "through it, and it is sweet. Be ye therefore not as the first brother, which counted his "
    "sheaves and lost his sleep, but as the second, whose table was long and whose doors were "
    "open; for in the day of famine the first shall be alone, but the second shall be hid among "
    "a multitude of friends. And the young man departed thoughtful; and it came to pass the "
    "same night that he opened his doors, and he slept.",

    # the lad lost in the snow at Beth-arbel (gospel narrative)
    "Now it came to pass in the winter, when the snow lay upon the mountains of Galilee, that "
    "Jesus went up with his disciples unto a village called Beth-arbel. And there was in that "
    "village a shepherd named Eliab, which had one son, a lad of twelve years; and the lad had "
    "gone out with the flock, and was not returned. And the father ran to Jesus, and fell down "
    "before him, and cried, Master, the night is at hand, and the snow falleth, and my son is "
    "upon the mountain; I pray thee, come. And Peter told him, Master, the way is steep, and we "
    "know not the paths thereof; let us wait for the day. But Jesus said, Doth the shepherd "
    "wait for the day if one sheep is missing? how much more for a son? And he arose and "
    "ascended, and the disciples followed him, and they carried torches in their hands. And "
    "they searched the mountain unto the fourth watch, calling the lad by his name; and the "
    "wind covered their voices, and the torches went out one by one. Then Thomas did say, It is "
    "in vain; the lad is dead. And Jesus tarried on the mountain, and lifted up his eyes to "
    "heaven, and prayed; and the wind was still, and they heard the bleating of sheep below "
    "them in a hollow of the rock. And they descended, and found the lad lying among the flock, "
    "and the sheep were gathered about him close, and kept him warm with their bodies; and he "
    "was asleep. And Jesus took him by the hand and said, Arise, thy father seeketh thee. And "
    "the lad arose, and said, I knew that I should be found, for I heard my name upon the wind. "
    "And they brought him down to the village at the dawning of the day, and the father ran and "
    "embraced him, and wept over him. And all the village came out, and they marvelled, and "
    "glorified God, and did say, The sheep have kept the shepherd. And Jesus said unto his "
    "disciples, Remember this night: for even so doth my Father keep his own in the desolate "
    "places of the world, when they are far from the fold, till the day break and they be "
    "brought home; for the Father counteth every lamb, and forgetteth none. And the disciples "
    "spake of that night many days after.",

    # the light older than the first day (meditation on the light)
    "The light is older than the first day, and God kindled it with a word, and there was no "
    "shadow in it. It went forth and stood upon the waters, and the deep was made bright. And "
    "it entered into the dwellings of men, and shone upon all that they had; but many shut "
    "their windows against it, for their works were evil and done in secret. Yet there were "
    "some that opened their windows, and abode in the light, and were not afraid; and these "
    "became children of the day, and their faces shone. And the Father sent his Son into the "
    "world, not as a king with horsemen, but as a light carried by the poor, that all might "
    "draw near without fear. Now the light is not far from any of us: it is in the word that is "
    "spoken in truth, and in the good that is done in secret, and in the hand that is stretched "
    "out to him that falleth. He that hath seen mercy hath seen the hand of God; and he that "
    "doeth mercy walketh in the light, though he know it not. The light cannot be shut up in a "
    "vessel, neither measured with a reed; yet every man may carry a little of it in his hands, "
    "even as a woman carrieth a coal from her neighbour's hearth to kindle her own. Take heed "
    "therefore how ye carry it, lest it be quenched by the way; and if ye find a house that is "
    "dark, enter in, and set it on the hearth, and blow on it gently, that it may burn. For the "
    "light that was before the first day shall be after the last, and they that love it shall "
    "dwell in it for ever, and the night shall not overtake them.",

    # the evening at Bethsaida (farewell discourse)
    "And it came to pass, as they rested by the fire in the evening in the house of Simon at "
    "Bethsaida, that Jesus perceived that his disciples were afraid; for they had heard that "
    "the rulers sought to kill him. And he said unto them, Wherefore are ye heavy? Have I not "
    "been with you in the storm and in the desert, in the house of the rich man and in the "
    "house of the leper? Did ye ever lack any thing while I was with you, or were ye forsaken? "
    "And they were silent, for they remembered the loaves. Then saith he, Neither shall ye lack "
    "after I am departed from you; for my Father, which sent me, knoweth all your ways. Behold, "
    "a man that soweth goeth away from the field, and the field groweth in his absence; so "
    "shall ye grow while I am away, and the harvest shall be gathered in its day. Andrew saith "
    "unto him, Lord, and what should we do while thou tarriest afar? Jesus saith unto him, "
    "Andrew, do as ye have seen me do: where the hungry are, feed them; where the mourners are, "
    "comfort them; and whensoever ye do these things, ye shall know that I am with you. And "
    "when ye pray unto the Father in the hour of need, he will hear you as a father heareth a "
    "child that calleth in the night, because ye are his. Ye shall have no gold of me, for I "
    "had none; but ye shall have the Father's care, which is better than gold or life itself, "
    "and it faileth not. And John laid his head upon the table and slept, and Jesus covered him "
    "with his own cloak; and the others watched the fire, and were comforted. Sleep now, for it "
    "is late, and the day shall have its own work.",

    # the vine cut back in winter (epistle on tribulation)
    "Wherefore, beloved, count not the tribulations that are laid on you as a sign that God "
    "hath turned away his face. For the husbandman that loveth his vine cutteth it back in the "
    "winter, and the vine weepeth under the knife, but in the summer it beareth. Even so the "
    "hand that ye think is heavy upon you is the hand that prepareth the fruit. I have been in "
    "hunger and in cold, and I have learned that the Lord is not far from the hungry, neither "
    "doth he forsake them that are in want, or in bonds for his sake. Be ye patient therefore, "
    "even as a woman is patient that setteth bread to rise; she cannot hasten the leaven, "
    "neither can she command the fire, but she doeth her work and waiteth. Let not the hands be "
    "slack, nor let the tongue murmur one against another; for murmuring is a moth in the "
    "garment of the church. Comfort them that are weaker than you, and be comforted by them "
    "that are stronger; so shall the burden be divided, and no man shall fall under it. "
    "Remember the former days, when ye first believed, how ye rejoiced though ye had little, "
    "and sang in the streets though the rulers frowned. That joy is not taken from you; it is "
    "laid up in you as seed in the furrow, and the storm shall water it. And if any of you be "
    "in prison for the name of the Lord Jesus, let him sing, for the walls of the prison are "
    "not higher than the ear of God. Grace be with you all, and the patience of Christ, and the "
    "hope that is laid up for us in heaven; for these afflictions endure but for a season, and "
    "he that hath called us is faithful.",

    # to the church in the house of Lydia (epistle on love)
    "Paul, a servant of Jesus Christ, unto the church that is in the house of Lydia: grace be "
    "unto you, and peace from God our Father. Now concerning the love which ye ought to have "
    "one toward another, I have heard of your contentions, how one saith, I was first, and "
    "another, I brought the most. Is this the spirit of Christ, who made himself of no "
    "reputation? The Lord of the table washed the feet of them that ate with him, and ye "
    "contend for the chief seat. Let him that is first be the last to eat, and let him that "
    "brought much ask nothing again. Let each count his brother's need before his own, and seek "
    "not his own pleasure, but that which is right in the sight of God. If thy brother offend "
    "thee, go unto him alone in the same day, and speak unto him as unto thine own flesh; and "
    "if he receive thy word, ye are reconciled, and that is more than silver. Bear with the "
    "elders that are slow and with the young that are hasty; for ye also were young, and the "
    "time is at hand that ye shall be grey-headed. If ye assemble on the first day of the week, "
    "let the rich man wait for the servant that is late from the field, and let the bread be "
    "broken after all are gathered; for the table is the Lord's, and not yours, and he is the "
    "host of it. Let no man among you keep a tally of wrongs; but if ye must keep a tally, "
    "count the mercies ye have received, and ye shall find no end of them. Love is the meat of "
    "the church: without it the table is empty, though it be covered with all manner of good "
    "things. The brethren that are with me salute you. Grace be with you all. Amen.",

    # the eye in the heart (epistle on faith)
    "Brethren, he that believeth hath an eye in his heart, whereby he seeth the harvest while "
    "the seed is yet in his hand, and the day while the night is yet upon him. The mariner hath "
    "it, that steereth by a star he cannot touch toward a haven he cannot see; and the mother "
    "hath it, that letteth go the hand of her child, that he may learn to walk. The man of many "
    "days hath it, that planteth a cedar whose shade he shall never sit under; and the builder "
    "hath it, that layeth the first stone of a house which his sons shall finish. The "
    "husbandman hath it, that breaketh the ground in the cold of the year and seeth wheat where "
    "there is mire. How much more should we have it, which have received the promises of God "
    "and the earnest of the Spirit? Consider the watchman on the wall, which hath never seen "
    "the king, yet he keepeth the gate for him as though he were present; and in the day of the "
    "king's appearing, that watchman shall be known by name. Such is he that believeth: he "
    "keepeth the door of his heart for a Lord that he hath not beheld, and he is not weary, "
    "because he knoweth that the Lord draweth nigh. Faith is not a staff to lean upon only in "
    "the day of trouble, but a light to walk by all the days; it is not a word uttered by the "
    "river, but a path walked unto the end. Therefore, brethren, if ye pray, believe that God "
    "heareth, though the heavens seem as brass; and if ye labour, believe that the labour is "
    "not lost, though the earth seem as stone. For God keepeth his word as the mountains keep "
    "their place, and he hath never yet failed any that waited for him; the seed that was sown "
    "in the frost shall come up in the spring, and the star that the mariner trusted shall "
    "bring him to the haven.",

    # my little children (epistle on kindness)
    "My little children, I am full of years, and my hand is weary, yet I write unto you, that "
    "ye forget not the word which ye heard in the time that ye were young in the faith; for we "
    "have tasted the kindness of God toward us. God hath shewed us his goodness, not in words "
    "only, but in deeds; his Son ate with us and walked in our dust, and bare our reproach. "
    "Seeing he hath dealt thus with us, shall we deal hardly with our brethren? He that "
    "entereth into the house of prayer in the morning and quarreleth with his neighbour in the "
    "noonday hath left his prayer on the doorstep. Let love be seen in the small things: in the "
    "cup of cold drink, in the word in season, in the hour given unto the sick. I have seen "
    "great men build houses for the Lord, and forget the widow that dwelleth in the shadow of "
    "the walls thereof; and I have seen a poor woman give her last mite to a stranger, and the "
    "Lord was with her. Be not weary in the small things, for the Lord himself was a carpenter, "
    "and he made tables and doors before he spake in the synagogue; and the work of the hands "
    "was not beneath him. Fear not them that mock you because of gentleness, for the meek shall "
    "stand when the mighty are fallen, and the patience of the Lord is longer than their scorn. "
    "Abide in his love, little children, as a bird abideth in the shadow of the rock when the "
    "hawk is abroad. The grace of Christ our Lord be with you all. Amen.",
)
