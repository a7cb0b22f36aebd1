"""Keyword search text, the rules every store shares: what goes into a keyword index, and the
terms of a question.

Stores import these from ``passageway`` (the sqlite store and the postgres plugin both do), so that
a word found by one store is found by another. The builtin store indexes passages with SQLite
FTS5's ``unicode61`` tokenizer with ``remove_diacritics 2``, so case and accents do not matter
(``Über`` finds ``uber``). ``ß`` is stored and queried as ``ss``, so ``Straße`` and ``strasse``
(Swiss spelling, or a question folded with ``str.casefold``) find each other. That tokenizer
treats a run of Chinese or Japanese characters as one long word, which would make CJK text
unfindable by any shorter query, so :func:`index_text` puts a space between CJK characters and
:func:`query_terms` cuts the question's CJK runs into pieces of two characters.
"""

from __future__ import annotations

import re

# Han, Hiragana, Katakana, Hangul syllables and CJK compatibility ranges: scripts written
# without spaces between words (Hangul uses spaces but short words; characters work for it too).
_CJK = (
    "\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3190-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
)
CJK_CHARACTER = re.compile(f"[{_CJK}]")
CJK_RUN = re.compile(f"[{_CJK}]+")
WORD = re.compile(r"\w+", re.UNICODE)

BM25_WEIGHTS = (2.0, 1.0, 1.5, 1.0)
"""BM25 weights of a word in a passage's title, path, heading and text: a word in the title or
heading says more about a passage than the same word in its body."""

MAX_QUERY_TERMS = 64
"""A question longer than this many terms is cut; BM25 over more adds time, not quality."""


def _sharp_s(text: str) -> str:
    return text.replace("ß", "ss").replace("ẞ", "SS")


def index_text(text: str) -> str:
    """The form of ``text`` stored in the FTS5 table: ``ß`` as ``ss``, CJK characters apart."""
    text = _sharp_s(text)
    if not CJK_CHARACTER.search(text):
        return text
    return CJK_CHARACTER.sub(lambda match: f" {match.group(0)} ", text)


def query_terms(question: str) -> list[str]:
    """The terms of a question: its words, and two-character pieces of its CJK runs."""
    terms: list[str] = []
    seen: set[str] = set()

    def add(term: str) -> None:
        key = term.casefold()
        if key not in seen and len(terms) < MAX_QUERY_TERMS:
            seen.add(key)
            terms.append(term)

    for word in WORD.findall(_sharp_s(question)):
        if word.startswith("_") or word.endswith("_"):
            word = word.strip("_")
            if not word:
                continue
        position = 0
        for run in CJK_RUN.finditer(word):
            if run.start() > position:
                add(word[position : run.start()])
            characters = run.group(0)
            if len(characters) == 1:
                add(characters)
            for start in range(len(characters) - 1):
                add(characters[start : start + 2])
            position = run.end()
        if position < len(word):
            add(word[position:])
    return terms
