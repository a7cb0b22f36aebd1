"""What the gate reads besides one cosine: signals relative to the question and its candidates.

One absolute cosine cannot say no when a whole source is about one topic: every passage of a
tool's documentation is close to every question about that tool, answered or not
(docs/gate-levels.md, "Documentation"). These signals measure a passage against the field it
competes in rather than against a fixed number, so they keep their meaning from one corpus to
the next:

* **the field**: the median cosine of the question's candidates from the same source. A passage
  that answers stands out of its source's field; one that is merely on topic does not.
* **distinctive terms**: the question's identifiers (an option or function name, a flag, an
  environment variable, anything in backticks): their occurrence in a passage is evidence no
  paraphrase gives.
* **rare words**: the question's content words that occur in few of its candidates. The words
  rescue counts only these, so a word that a topic uses everywhere ("want", "full", "10", the
  tool's own name) cannot let a passage through.
* **named sources and items**: a question that names a source ("starlette") or the title word of
  one item ("Tokyo Night") identifies where the answer lives.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence

from passageway.kernel.store import Candidate
from passageway.kernel.text.stopwords import STOPWORDS, content_words, words

_IDENTIFIER = re.compile(
    r"`([^`\n]{2,80})`"  # anything in backticks
    r"|(?<![\w-])(--?[A-Za-z][\w-]+)"  # a flag: --force, -rf
    r"|([A-Za-z_]\w*(?:[._:]\w+)+(?:\(\))?)"  # snake_case, dotted.name, a.b()
    r"|(\w+\(\))"  # a call: main()
    r"|\b([a-z]+[A-Z]\w*)"  # camelCase
    r"|\b([A-Z][a-z0-9]+[A-Z]\w*)"  # PascalCase with an inner capital: TestClient, GZipMiddleware
    r"|\b([A-Z]{2,}[a-z]+[A-Z]?\w*)"  # JSONResponse
)
_SPLIT = re.compile(r"[^0-9A-Za-z]+")

MIN_FIELD = 5
"""A source with fewer candidates than this is measured against the whole pool's field."""


def identifiers(question: str) -> tuple[str, ...]:
    """The question's distinctive terms, folded: names a paraphrase would not produce.

    Terms with inner punctuation (``allow_origin_regex``, ``app.state``, ``--no-force``), inner
    capitals (``TestClient``) or backticks; English words, numbers and plain capitals
    (``API``) are not identifiers.
    """
    found: dict[str, None] = {}
    for match in _IDENTIFIER.finditer(question):
        term = next(group for group in match.groups() if group)
        term = term.strip().strip(".,;:?!").casefold()
        if len(term) >= 3 and any(char.isalpha() for char in term):
            found.setdefault(term, None)
    return tuple(found)


def contains_term(text: str, term: str) -> bool:
    """Whether folded ``text`` holds ``term`` (a folded identifier) not inside a longer name."""
    start = text.find(term)
    while start >= 0:
        before = text[start - 1] if start else " "
        end = start + len(term)
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return True
        start = text.find(term, start + 1)
    return False


def fields(pool: Iterable[Candidate]) -> dict[str, float]:
    """The median cosine of the candidates of each source (the pool's own under ``""``).

    A source with fewer than :data:`MIN_FIELD` candidates is given the pool's median; a pool that
    small has no field at all (minus infinity: every passage leads it), as in a source of a few
    notes.
    """
    by_source: dict[str, list[float]] = {}
    everything: list[float] = []
    for candidate in pool:
        if math.isnan(candidate.similarity):
            continue  # no vector yet (during a build): not part of any field
        by_source.setdefault(candidate.source, []).append(candidate.similarity)
        everything.append(candidate.similarity)
    if len(everything) < MIN_FIELD:
        return {"": -math.inf}
    overall = statistics.median(everything)
    result = {"": overall}
    for source, cosines in by_source.items():
        result[source] = statistics.median(cosines) if len(cosines) >= MIN_FIELD else overall
    return result


def rare_words(question_words: Sequence[str], present: Mapping[object, frozenset[str]],
               share: float) -> frozenset[str]:
    """The question words found in at most ``share`` of the candidates (at least in one, at most
    in two when the pool is small); numbers never count."""
    if not present:
        return frozenset()
    limit = max(2, int(share * len(present)))
    rare = set()
    for word in question_words:
        if word.isdigit():
            continue
        count = sum(1 for seen in present.values() if word in seen)
        if 0 < count <= limit:
            rare.add(word)
    return frozenset(rare)


def name_words(name: str) -> frozenset[str]:
    """The words of a source name or title that can identify it: three letters or more, not a
    stopword (``starship-en`` → ``starship``)."""
    return frozenset(
        word for word in (part.casefold() for part in _SPLIT.split(name))
        if len(word) >= 3 and word not in STOPWORDS and not word.isdigit()
    )


def named_sources(question_words: Iterable[str], sources: Iterable[str]) -> frozenset[str]:
    """The sources whose name shares a word with the question; empty when that word names every
    source in the pool (it then tells none apart)."""
    asked = set(question_words)
    pool = set(sources)
    named = frozenset(source for source in pool if name_words(source) & asked)
    return frozenset() if named == pool else named


def named_items(question_words: Iterable[str], titles: Mapping[str, str]) -> frozenset[str]:
    """The items (by id) whose title holds a question word that no other item's title holds."""
    asked = set(question_words)
    owners: dict[str, set[str]] = {}
    for item_id, title in titles.items():
        for word in set(content_words(title)) & asked:
            if len(word) >= 4:
                owners.setdefault(word, set()).add(item_id)
    return frozenset(next(iter(ids)) for ids in owners.values() if len(ids) == 1)


def folded(candidate: Candidate) -> str:
    """The passage's title, heading and text, lower-cased, for :func:`contains_term`."""
    return f"{candidate.title}\n{candidate.heading or ''}\n{candidate.text}".casefold()


__all__ = [
    "contains_term", "fields", "folded", "identifiers", "name_words", "named_items",
    "named_sources", "rare_words", "words",
]


PREFIX = 6
"""A question word counts as known when a candidate word shares its first six letters (so German
inflection and compounds, "Siedlern"/"Siedler", "Amazonaswaldes"/"Amazonas", do not count as
unknown); shorter words must match exactly."""


def unknown_words(question_words: Sequence[str], vocabulary: set[str]) -> frozenset[str]:
    """The question words that no candidate word matches, exactly or by a six-letter prefix."""
    prefixes = {word[:PREFIX] for word in vocabulary if len(word) >= PREFIX}
    unknown = set()
    for word in question_words:
        if word in vocabulary:
            continue
        if len(word) >= PREFIX and (
            word[:PREFIX] in prefixes
            or any(word[:end] in vocabulary for end in range(PREFIX, len(word)))
        ):
            continue
        unknown.add(word)
    return frozenset(unknown)
