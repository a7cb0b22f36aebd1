"""What a prompt asks: the question inside a pasted file, log, trace or diff.

The prompt hook sends whatever the user typed, and that is rarely one clean question: a pasted
source file, a log or a stack trace with a question before or after it, or no question at all.
Embedded whole, such a prompt is slow (the model reads it window by window) and means nothing in
particular, so its nearest passage is chance; searched by keywords, its identifiers match at
random. :func:`asked` reduces a prompt to what it asks before anything is embedded or searched,
for every caller of recall (the hook, the MCP tool, ``passageway eval``).

The rules, in order (``docs/ranking-and-gate.md``, "Long prompts", has the measurements):

1. **Lines are prose or material.** Fenced blocks (```` ``` ```` or ``~~~``) are material whole.
   Outside them a line is material when it looks like code (keywords that open a statement,
   brackets and semicolons at its end, ``name(`` calls, ``snake_case`` and ``dotted.names``,
   indentation of four spaces or a tab), a log line (a timestamp or a level such as ``ERROR``
   at its start), a stack trace (``Traceback``, ``File "…", line 3``, ``at pkg.Class(File.java:9)``,
   ``SomeError: …``), a diff (``@@``, ``diff --git``, ``+++``/``---`` and the ``+``/``-`` lines of
   such a block), or data (JSON, table rows, ``key: value`` and ``key = "any value"`` lines,
   paths, long tokens, HTTP headers and status lines); pytest's ``E   `` lines are trace and a
   word alone that closes a block (``end``, ``fi``) is code. A comment line (``#``, ``//``,
   ``/*``, ``--``) is material inside material, so a question in a code comment belongs to the
   paste, not to the user. Everything else with at
   least one word of letters is prose. A line that asks (a question mark at its end, or a
   question or request word at its start) in at least :data:`ASKING_WORDS` plain words is prose
   whatever code it quotes (``How do I pass --reload to uv run?``), unless it is a log or trace line.
2. **A prompt of one paragraph of prose**, up to :data:`PLAIN_CHARS` characters, is the question
   as it stands (a search such as "black death algiers" asks without a question mark).
3. **Otherwise the prose is cut into sentences and the questions are kept**: a sentence that ends
   with a question mark or opens with a question or request word of English or German ("how",
   "explain", "wie", "erkläre", …). Beside pasted material a question takes the prose sentence
   before it in its paragraph along, which says what went wrong ("Chrome always downloads the PDF.
   How do I make it open in the tab?"); without material only a question with fewer than
   :data:`~passageway.kernel.query.prompt_sentences.MIN_CONTENT_WORDS` content words does. Beside
   a paste, a question with that many content words or more reads alone: the sentence before it
   is its ``context``, searched with it second (rule 5), not part of it. A sentence that ends
   with a colon ("Here is the log:") is never taken along. Beside a paste a line break before a
   capital letter ends a sentence, so a line of program output without a full stop does not
   open the user's first sentence.
4. **Nothing asked, nothing searched**: a prompt without such a sentence (a paste alone, a long
   text that asks nothing) reduces to ``""``, and recall answers silence without embedding it.
5. **The paste's names as evidence**: when a question was cut out of pasted material, the names
   in that material (exception names, ``--flags``, modules, names of the code, keyword arguments
   and settings keys; :func:`~passageway.kernel.query.prompt_names.paste_terms`) go with it as
   ``terms``. Recall embeds the question once more, after its context and with those names a
   candidate passage shows as code (:func:`~passageway.kernel.query.prompt_names.known_names`),
   so "What's going on?" under a traceback still finds the page about its error, while names no
   source knows change nothing. The ranker and the gate's word count still see the question
   alone. Names never make a question of a paste that asks nothing (rule 4).
6. **The model's own limit**: what is kept is cut to the embedder's input limit in its tokens
   (:func:`fit_to_tokens`), sentence by sentence, so a prompt never costs more than one window.

The rules live in three modules by what they decide: :mod:`~passageway.kernel.query.prompt_lines`
(prose or material, rule 1), :mod:`~passageway.kernel.query.prompt_sentences` (sentences and
questions, rules 2 and 3) and :mod:`~passageway.kernel.query.prompt_names` (the paste's names,
rule 5); this one puts them together. The rules are plain on purpose: a newcomer can predict
what they keep, and they run in a few milliseconds on the hook's 20,000 characters.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import attrs

from passageway.kernel.embedder import MAX_TOKENS
from passageway.kernel.query.prompt_lines import line_kinds
from passageway.kernel.query.prompt_names import paste_terms
from passageway.kernel.query.prompt_sentences import (
    asked_sentences,
    is_question_sentence,
    prose_sentences,
    sentences,
)
from passageway.kernel.text.stopwords import content_words

__all__ = ["PLAIN_CHARS", "Asked", "asked", "fit_to_tokens", "is_question", "is_question_sentence",
           "line_kinds", "paste_terms", "sentences"]

MAX_NAME_CHARS = 100
"""The longest run of word characters, ``.`` and ``-`` that rule 5 reads as a possible name. A longer
one (a pasted separator line, a token, a path of dots) names nothing a source shows, and the name
patterns would spend time quadratic in its length on it (issue 38: a letter and 19,900 underscores
held the server for 12-40 s), so it is read as a space."""
_OVERLONG_RUN = re.compile(rf"(?<![\w.-])[\w.-]{{{MAX_NAME_CHARS + 1},}}")

PLAIN_CHARS = 1_000
"""A prompt of one paragraph of prose and at most this long is taken whole: one or a few sentences
a user typed. A longer one, or several paragraphs (a pasted email, an article), is reduced to its
questions like any other."""


@attrs.frozen
class Asked:
    """What a prompt asks: ``text`` to embed and search (``""``: nothing), and ``why``.

    ``why`` is ``"plain"`` (prose only, taken whole), ``"questions"`` (the question sentences of
    a longer or mixed prompt) or ``"nothing asked"``; eval reports and tests read it.
    """

    text: str
    why: str
    terms: tuple[str, ...] = ()
    """Names from the pasted material around the question (rule 5), for the keyword search and,
    when a source shows them as code, for a second embedding of the question."""
    context: str = ""
    """The sentence(s) before a question beside a paste that say what went wrong, when the
    question can be read alone (rule 3): searched with the question second, never alone."""

    @property
    def silent(self) -> bool:
        return not self.text


def asked(prompt: str) -> Asked:
    """The question(s) inside ``prompt``; see the module docstring for the rules."""
    text = prompt.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        return Asked("", "nothing asked")
    lines = text.split("\n")
    kinds = line_kinds(lines)
    pasted = "material" in kinds
    if not pasted and "blank" not in kinds and len(text) <= PLAIN_CHARS:
        return Asked(text, "plain")
    kept, context = asked_sentences(prose_sentences(lines, kinds, beside_paste=pasted), beside_paste=pasted)
    if not kept:
        return Asked("", "nothing asked")
    material = [_OVERLONG_RUN.sub(" ", line) for line, kind in zip(lines, kinds, strict=True)
                if kind == "material"]
    question = " ".join(kept)
    return Asked(question, "questions", paste_terms(material, question), " ".join(context))


def fit_to_tokens(text: str, count: Callable[[str], int], limit: int = MAX_TOKENS) -> str:
    """``text`` cut to at most ``limit`` tokens by ``count``: whole sentences while they fit, then
    the first sentence cut at a word (rule 6). ``count`` is the embedder's token count.

    The most that fit is searched by doubling, then halving: ``count`` reads a few prefixes no
    longer than about twice what fits, not one prefix per sentence (thousands of short questions
    in a prompt would otherwise be counted again and again on the event loop)."""
    if count(text) <= limit:
        return text
    pieces = sentences(text)
    kept = _most_that_fit(len(pieces), lambda number: count(" ".join(pieces[:number])) <= limit)
    if kept:
        return " ".join(pieces[:kept])
    words = text.split()
    fitting = _most_that_fit(len(words), lambda number: count(" ".join(words[:number])) <= limit)
    return " ".join(words[:fitting])


def _most_that_fit(total: int, fits: Callable[[int], bool]) -> int:
    """The largest ``n`` of ``0..total`` for which ``fits(n)`` holds (``fits`` holds up to some
    ``n`` and not after it); ``fits`` is asked about ``2 log n`` times."""
    low, high = 0, 1
    while high <= total and fits(high):
        low, high = high, high * 2
    high = min(high, total + 1)  # fits(high) does not hold, or high is past the end
    while high - low > 1:
        middle = (low + high) // 2
        if fits(middle):
            low = middle
        else:
            high = middle
    return low


# ---------------------------------------------------------------------------------------------
# Whether a prompt is worth a search (the hook's filter: ``Question.only_questions``)
# ---------------------------------------------------------------------------------------------

_WORD = re.compile(r"\w+", re.UNICODE)

ACKNOWLEDGEMENTS = frozenset({
    "ok", "okay", "k", "kk", "yes", "yep", "yeah", "no", "nope", "sure", "thanks", "thank you", "thx",
    "ty", "great", "good", "fine", "nice", "cool", "perfect", "done", "continue", "go on", "go ahead",
    "proceed", "next", "lgtm", "do it", "please do", "sounds good", "weiter", "mach weiter", "ja",
    "nein", "danke", "danke schön", "gut", "super", "passt", "genau", "stimmt", "los", "bitte",
    "klingt gut", "alles klar", "fertig", "weiter so", "y", "n",
})
"""Whole prompts that acknowledge or steer rather than ask (English and German, as users type them)."""

FOLLOW_UP_WORDS = frozenset({
    "first", "second", "third", "fourth", "last", "next", "previous", "other", "others", "another",
    "rest", "more", "again", "same", "one", "ones", "two", "three", "part", "point", "example",
    "erste", "ersten", "zweite", "zweiten", "dritte", "letzte", "letzten", "nachste",
    "andere", "anderen", "mehr", "nochmal", "gleiche", "teil", "punkt", "beispiel",
})
"""Words that point back at an earlier answer ("the second one", "the rest") rather than name a topic."""
SHORT_FOLLOW_UP_WORDS = 6


def is_question(prompt: str) -> bool:
    """Whether a (reduced) prompt is worth searching the sources for: not empty, not a slash
    command, not an acknowledgement, and not a short follow-up without a content word."""
    text = prompt.strip()
    if not text or text.startswith("/"):
        return False
    words = _WORD.findall(text.lower())
    if not words or " ".join(words) in ACKNOWLEDGEMENTS:
        return False
    meaningful = content_words(text)
    if len(words) <= SHORT_FOLLOW_UP_WORDS:
        meaningful = [word for word in meaningful if word not in FOLLOW_UP_WORDS]
    return bool(meaningful)
