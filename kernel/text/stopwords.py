"""Stopwords in English and German, and the content words of a question.

The relevance gate counts the *content words* a passage shares with a question: the words left
after lower-casing, folding accents (``ü`` → ``u``, as the keyword index's ``remove_diacritics``
does), and dropping stopwords of either language and one-letter tokens. Numbers stay: a year is
often the most specific word of a question. The lists are short, hand-made and cover function
words and question words; they are deliberately language-blind (a German question may be asked of
an English source), so a word that is a stopword in one language is dropped in both ("die",
"was", "war", "also", "man").
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable

_WORD = re.compile(r"\w+", re.UNICODE)


def _word_list(text: str) -> frozenset[str]:
    return frozenset(text.split())


ENGLISH = _word_list(
    """
    a about above after again against all almost along already also although always am among an
    and another any anyone anything are around as at be became because become becomes been before
    being below between both but by can cannot could did do does doing done down during each
    either else enough etc ever every few for from further get gets got had has have having he her
    here hers herself him himself his how however i if in into is it its itself just least less
    let like many may me might more most much must my myself near neither no nor not now of off
    often on once one only or other others otherwise our ours ourselves out over own per perhaps
    quite rather same several shall she should since so some such than that the their theirs them
    themselves then there therefore these they this those though through thus to too toward
    towards under until up upon us use used using very via was we well were what whatever when
    whence where whereas whether which while who whom whose why will with within without would yet
    you your yours yourself yourselves
    kind kinds sort type types way ways thing things called name named amount number
    """
)
"""English function words and question words (and a few words that only frame a question)."""

GERMAN = _word_list(
    """
    aber alle allem allen aller alles als also am an ander andere anderem anderen anderer anderes
    anders auch auf aus bei beide beiden beim bin bis bist bzw da dabei dadurch dafür dagegen daher
    damals damit dann daran darauf daraus darin darum darunter das dass dasselbe davon dazu dein
    deine dem demselben den denen denn der deren derer des deshalb dessen dich die dies diese
    diesem diesen dieser dieses dir doch dort du durch ein eine einem einen einer eines einige
    einigen einiger einiges er es etwa etwas euch euer eure für gab gar gegen gewesen gibt hab habe
    haben hat hatte hatten hier hin hinter ich ihm ihn ihnen ihr ihre ihrem ihren ihrer ihres im
    immer in indem ins ist ja jede jedem jeden jeder jedes jedoch jene jenem jenen jener jenes jetzt
    kann kannst kein keine keinem keinen keiner können könnte man manche manchem manchen mancher
    mehr mein meine mich mir mit muss musste nach nicht nichts noch nun nur ob oder ohne schon sehr
    sein seine seinem seinen seiner seit sich sie sind so solche solchem solchen solcher soll
    sollte sondern sonst über um und uns unser unsere unter viel viele vom von vor wann war waren
    warum was weil welche welchem welchen welcher welches wem wen wenn wer werde werden wie wieder
    wieso will wir wird wirst wo wodurch woher wohin womit woran worauf woraus worin wovon wozu
    wurde wurden würde würden zu zum zur zwar zwischen
    art arten weise genannt heißt hieß namen anzahl wieviel wieviele
    """
)
"""German function words and question words (and a few words that only frame a question)."""


@functools.lru_cache(maxsize=65536)
def fold(word: str) -> str:
    """Lower-case ``word`` and strip its accents, as the keyword index compares words.

    Cached: a vocabulary repeats, and recall folds every word of every candidate passage."""
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


STOPWORDS = frozenset(fold(word) for word in ENGLISH | GERMAN)
"""Both lists, folded: what :func:`content_words` drops."""


_ONLY_ENGLISH = frozenset(fold(word) for word in ENGLISH - GERMAN)
_ONLY_GERMAN = frozenset(fold(word) for word in GERMAN - ENGLISH)


def language_of(text: str) -> str | None:
    """``"en"`` or ``"de"`` by which language's own stopwords ``text`` uses more, else ``None``.

    Crude on purpose: it only has to tell an English from a German question or passage, which
    the function words do reliably from about five words on.
    """
    return language_of_words(words(text))


def language_of_words(folded: Iterable[str]) -> str | None:
    """:func:`language_of` for a text already split by :func:`words` (to split it only once)."""
    if not isinstance(folded, list | tuple):
        folded = list(folded)
    english = sum(map(_ONLY_ENGLISH.__contains__, folded))
    german = sum(map(_ONLY_GERMAN.__contains__, folded))
    if english == german:
        return None
    return "en" if english > german else "de"


def words(text: str) -> list[str]:
    """Every word of ``text``, folded, in order (repeats kept).

    ASCII text needs no accent stripping, and lower-casing it whole gives the same words as
    folding them one by one, several times faster (recall splits about a hundred candidate
    passages a question).
    """
    if text.isascii():
        return _WORD.findall(text.lower())
    return list(map(fold, _WORD.findall(text)))


def content_words(text: str) -> list[str]:
    """The distinct content words of ``text`` in order of first appearance.

    Stopwords of either language, one-letter tokens and the underscore-only tokens that ``\\w``
    admits are dropped; everything else (numbers included) is kept, folded.
    """
    seen: dict[str, None] = {}
    for word in words(text):
        if len(word) < 2 or word in STOPWORDS or not word.strip("_"):
            continue
        seen.setdefault(word, None)
    return list(seen)


def matched_words(question_words: Iterable[str], text: str) -> set[str]:
    """The question's content words that occur as whole words in ``text``."""
    present = set(words(text))
    return {word for word in question_words if word in present}
