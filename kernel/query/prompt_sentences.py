"""Sentences and questions: which sentences of a prompt's prose ask something.

The prompt reducer (:mod:`passageway.kernel.query.prompt`) hands over the prose lines of a prompt
(:mod:`passageway.kernel.query.prompt_lines` told them from pasted material); this module cuts them
into sentences and keeps the ones that ask, each with the sentence before it that says what it is
about. The words that make a question are English and German, lower-cased.
"""

from __future__ import annotations

import re

from passageway.kernel.text.stopwords import content_words

MIN_CONTENT_WORDS = 3
"""A question of a prompt without pasted material borrows the sentence before it in its paragraph
only when it has fewer content words than this ("Any idea why?", "How do I hide it?"). Beside a
paste a question always borrows it (:func:`questions`)."""

LETTER_WORD = re.compile(r"[^\W\d_]{2,}")
LIST_ITEM = re.compile(r"^\s*([-*•]|\d+[.)])\s+")
_SENTENCE_GAP = re.compile(r"[.!?…？！][\"')\]»“”]*\s+|:\s+(?=[A-ZÄÖÜ])")
_ABBREVIATIONS = frozenset(
    ("mr", "mrs", "ms", "dr", "st", "vs", "ca", "nr", "bzw", "chr", "etc", "usw", "prof", "jr", "sr", "no",
     "vgl", "ggf")
)


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


INTERROGATIVES = _word_set(
    """
    what which who whom whose when where why how is are was were do does did can could should would
    will shall may might has have had whats what's who's how's where's
    was welche welcher welches welchen wer wem wen wessen wann wo woher wohin warum wieso weshalb
    wozu wie ist sind war waren wird werden kann konnen können gibt gab hat haben hatte darf soll
    sollte
    """
)
"""Words that open a question in English or German (lower-cased): a sentence they open is a
question unless it ends with a full stop or a colon ("When I run it, it fails.")."""

REQUESTS = _word_set(
    """
    tell explain describe show list find give name summarize summarise compare define
    erklare erkläre erklär erklar beschreibe zeige zeig nenne liste finde gib fasse vergleiche
    nennen erklären erklaren beschreiben zeigen geben finden vergleichen
    """
)
"""Words that open a request ("Explain the Black Death."), whatever its last character."""


def prose_sentences(lines: list[str], kinds: list[str], *, beside_paste: bool = False) -> list[list[str]]:
    """The prose, as paragraphs (runs of ``"prose"`` lines; each list item one of its own) cut
    into sentences.

    Beside a paste (``beside_paste``) a line break also ends a sentence when the next line opens
    with a capital letter (:func:`_opens_sentence`): a line of pasted output that the line
    tests take for prose ("File not found", "CentOS Linux release 7.9") ends without a full stop,
    and would otherwise open the user's first sentence after it."""
    paragraphs: list[list[str]] = []
    current: list[list[str]] = []
    for line, kind in [*zip(lines, kinds, strict=True), ("", "blank")]:
        if kind == "prose":
            if LIST_ITEM.match(line) and current:
                paragraphs.append(_cut(current))
                current = []
            if current and beside_paste and _opens_sentence(line):
                current.append([])
            if not current:
                current.append([])
            current[-1].append(line.strip())
        elif current:
            paragraphs.append(_cut(current))
            current = []
    return paragraphs


def _cut(pieces: list[list[str]]) -> list[str]:
    """The sentences of a paragraph given as pieces of lines that end a sentence."""
    return [sentence for piece in pieces for sentence in sentences(" ".join(piece))]


def _opens_sentence(line: str) -> bool:
    """Whether the line break before ``line`` ends a sentence beside a paste: ``line`` opens with
    a capital letter other than the pronoun "I" (a line a user wraps goes on in small letters;
    "I" is written large mid-sentence too). A full stop before the break cuts there anyway."""
    words = line.split(maxsplit=1)
    opening = words[0] if words else ""
    if not opening[:1].isupper():
        return False
    return not (opening == "I" or opening.startswith(("I'", "I’")))


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences: after ``.``, ``!``, ``?`` and a space when no small letter
    follows, but not after one letter ("y. pestis", "H. Garrison"), a number of one or two digits
    (German ordinals, "am 12. Mai") or a common abbreviation ("Mr.", "bzw."); and after a colon
    that a capital follows ("Here is the log: What …")."""
    pieces, start = [], 0
    for gap in _SENTENCE_GAP.finditer(text):
        following = text[gap.end() : gap.end() + 1]
        if following.islower():
            continue
        if text[gap.start()] == ".":
            word = _word_before(text, gap.start()).lstrip("(\"'„“«")
            if len(word) == 1 or (word.isdigit() and len(word) <= 2) or word.lower() in _ABBREVIATIONS:
                continue
            if "." in word and len(word) <= 5:  # "U.S.", "z.B."
                continue
        pieces.append(text[start : gap.start() + 1].strip())
        start = gap.end()
    pieces.append(text[start:].strip())
    return [piece for piece in pieces if piece]


def _word_before(text: str, end: int) -> str:
    """The last word (run of non-space characters) of ``text[:end]``.

    Read backwards from ``end``, so that cutting a text of many short sentences stays linear (issue
    38: splitting the whole text before each full stop took seconds on 20,000 characters): the
    scan stops at the space before the word, and the spaces it crosses end the previous sentence.
    """
    stop = end
    while stop > 0 and text[stop - 1].isspace():
        stop -= 1
    start = stop
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    return text[start:stop]


def is_question_sentence(sentence: str) -> bool:
    """A question mark at the end, a request word at the start, or a question word at the start
    of a sentence that does not end as a statement (English and German)."""
    stripped = sentence.rstrip(" \"')]»“”")
    if stripped.endswith(("?", "？")):
        return True
    first = LETTER_WORD.search(LIST_ITEM.sub("", sentence, count=1))
    if not first or first.start() > 2:
        return False
    word = first.group(0).lower()
    return word in REQUESTS or (word in INTERROGATIVES and not stripped.endswith((".", ":", "!")))


CONTEXT_BESIDE_PASTE = True
"""Beside a paste, whether the sentence before a question that has :data:`MIN_CONTENT_WORDS`
content words or more is context (:func:`asked_sentences`) rather than part of the question.
Chosen by ``bench/paste_rules.py`` on the tuning projects (starship, typer): pasted − bare hit@3
+3 with it, +2 without (docs/ranking-and-gate.md, "Long prompts")."""


def questions(paragraphs: list[list[str]], *, beside_paste: bool = False) -> list[str]:
    """The question sentences of ``paragraphs``, each after the sentence before it in its
    paragraph when it needs that one to be understood (:func:`asked_sentences`, context and
    question in one list)."""
    return asked_sentences(paragraphs, beside_paste=beside_paste, split_context=False)[0]


def asked_sentences(paragraphs: list[list[str]], *, beside_paste: bool = False,
                    split_context: bool | None = None) -> tuple[list[str], list[str]]:
    """The question sentences of ``paragraphs`` and the context they are asked in.

    A question takes the sentence before it in its paragraph along when it has fewer than
    :data:`MIN_CONTENT_WORDS` content words ("Any idea why?", "How do I hide it?"): that one
    joins the question. Beside a paste (``beside_paste``) every question takes it, because there
    the sentence before the question is the one that says what went wrong ("Chrome always
    downloads the PDF. How do I make it open in the tab?"), while the paste itself is left out;
    for a question that can be read alone it is *context* (second list, when ``split_context``,
    by default :data:`CONTEXT_BESIDE_PASTE`): recall searches the question alone first and the
    context with it second, so the story of a problem can add a page but not push out the one
    the question finds. A sentence that ends with a colon announces the paste ("Here is the
    log:") and is never taken along.
    """
    split = CONTEXT_BESIDE_PASTE if split_context is None else split_context
    kept: list[str] = []
    context: list[str] = []
    for paragraph in paragraphs:
        for number, sentence in enumerate(paragraph):
            if not is_question_sentence(sentence):
                continue
            if number:
                before = paragraph[number - 1]
                short = len(content_words(sentence)) < MIN_CONTENT_WORDS
                usable = not before.rstrip().endswith(":") and before not in kept and before not in context
                if usable and short:
                    kept.append(before)
                elif usable and beside_paste:
                    (context if split else kept).append(before)
            if sentence not in kept:
                kept.append(sentence)
    return kept, [sentence for sentence in context if sentence not in kept]
