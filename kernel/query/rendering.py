"""The answer as the model reads it: excerpts cut to the 400-token budget, and the Markdown the
MCP tool and the hook return.

Tokens are approximated as characters / 4 (:func:`approx_tokens`), which is close for English and
German prose with the e5 tokenizer's vocabulary and needs no tokenizer at query time.

How the budget is spent (:func:`fit_budget`), answers first:

1. **The fixed parts are short.** A hit's header is its title and heading; its second line names
   the source and the item (what the ``read`` tool takes), the address only when it is one a
   reader can open (``file://`` addresses are left out: the item names the file), either of them
   with ``#anchor`` when the section has one, the breadcrumb
   only when the item does not already spell it, and the date without its time.
2. **The excerpts share what remains by need.** A hit whose passage is shorter than its share
   takes only what it needs, and the rest goes to the others (so a short passage never wastes
   room another needs). A first hit that clearly leads the others (:data:`CLEAR_LEAD`) counts
   :data:`LEADER_WEIGHT` times. A share under :data:`MIN_SHARE` characters drops the
   lowest-ranked hit instead; a lone hit has the whole budget.
3. **Related items come last**, one line each, as many as still fit.
4. **What was cut can be read**: when an excerpt is cut, one closing line names the ``read`` tool,
   which returns the whole section (docs/server.md).

Where each excerpt starts is chosen by :mod:`passageway.kernel.query.excerpts`.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence

import attrs

from passageway.kernel.index.windows import flat
from passageway.kernel.query.excerpts import best_start, cut, unit_starts
from passageway.kernel.records import Answer, Hit, Related

BUDGET_TOKENS = 400
"""The whole answer (passages, their headers and the related items) stays under about this."""

MIN_SHARE = 120
"""Fewest characters of excerpt a hit is shown with; below it the lowest-ranked hit is dropped."""

CLEAR_LEAD = 0.02
"""A first hit whose similarity to the question exceeds every other hit's by at least this much
leads clearly, and its excerpt gets :data:`LEADER_WEIGHT` shares."""

LEADER_WEIGHT = 2.0

READ_NOTE = "Cut excerpts (…): the `read` tool returns the rest (its source, item and heading, as above)."


def approx_tokens(text: str) -> int:
    """Tokens, estimated as characters / 4 (rounded up)."""
    return -(-len(text) // 4)


def excerpt(text: str, question: str, limit: int, anchor: int | None = None) -> str:
    """At most ``limit`` characters of ``text``, around what answers the question.

    The excerpt starts at ``anchor`` (where the passage's window most similar to the question
    starts, :func:`passageway.kernel.query.excerpts.anchors`) or, without one, at the sentence that
    holds the most distinct content words of the question; a line of a code block, a table row or
    a list item that shows more of the question's words moves it there
    (:func:`passageway.kernel.query.excerpts.best_start`). It starts earlier when the rest would
    not fill ``limit``, its cuts fall between sentences, lines, rows and items, and it ends at a
    word boundary with "…" when cut.
    """
    flat_text = flat(text)
    shown, moved = compact_tables(flat_text)
    if len(shown) <= limit:
        return shown
    starts = unit_starts(text)
    start = best_start(text, flat_text, question, limit, anchor, starts)
    return cut(shown, moved(start), limit, starts=sorted({moved(unit) for unit in starts}))


_DELIMITER_CELLS = re.compile(r"(?<=\|) ?:?-{4,}:? ?(?=\|)")
_DELIMITER_ROW = re.compile(r"\|(?: ?:?-{3,}:? ?\|)+")


def compact_tables(text: str) -> tuple[str, Callable[[int], int]]:
    """Flat ``text`` with the dashes of its table delimiter rows cut to three a cell
    (``| --- | --- |``), and the map from a place in ``text`` to the same place in the result.
    Aligned Markdown tables pad that row to the widest cell, often hundreds of characters that
    would fill an excerpt's share and say nothing."""
    removed: list[tuple[int, int]] = []  # (end in text, characters removed up to there)
    pieces: list[str] = []
    last = total = 0
    for row in _DELIMITER_ROW.finditer(text):
        short = _DELIMITER_CELLS.sub(" --- ", row.group(0))
        pieces += [text[last : row.start()], short]
        total += len(row.group(0)) - len(short)
        removed.append((row.end(), total))
        last = row.end()
    if not removed:
        return text, lambda place: place
    pieces.append(text[last:])
    ends = [end for end, _ in removed]

    def moved(place: int) -> int:
        before = bisect.bisect_right(ends, place)
        return place - (removed[before - 1][1] if before else 0)

    return "".join(pieces), moved


def _header(hit: Hit) -> str:
    heading = hit.heading
    if heading and hit.title and heading.startswith(hit.title + " › "):
        heading = heading[len(hit.title) + 3 :]  # a trail that repeats the title
    return " › ".join(part for part in (hit.title, heading) if part)


def _openable(url: str) -> bool:
    """An address a reader can follow from the answer (a ``file://`` one names a file the item
    id already names)."""
    return bool(url) and not url.startswith("file:")


def _meta(hit: Hit) -> list[str]:
    # The section's anchor goes on the address when one is shown (https://…/page#install), else
    # on the item (notes: guide.md#install), which is then the only place the answer names.
    anchor = f"#{hit.anchor}" if hit.anchor else ""
    if _openable(hit.url) and hit.url != hit.item_id:
        meta = [f"{hit.source}: {hit.item_id}", hit.url.split("#", 1)[0] + anchor if anchor else hit.url]
    else:
        meta = [f"{hit.source}: {hit.item_id}{anchor}"]
    if hit.path and not hit.item_id.startswith("/".join(hit.path) + "/"):
        meta.append(" / ".join(hit.path))
    if hit.updated:
        meta.append(f"updated {hit.updated[:10]}")
    if hit.also_in:
        meta.append("also in: " + ", ".join(hit.also_in))
    return meta


def _related_line(item: Related) -> str:
    where = item.url if _openable(item.url) else f"{item.source}: {item.item_id}"
    return f"- {item.title} ({where})"


def shares(needs: list[int], room: int, weights: list[float]) -> list[int]:
    """Characters for each excerpt: ``room`` split by ``weights``, a hit that needs less than its
    part taking only its need and leaving the rest to the others (water-filling)."""
    given = [0] * len(needs)
    open_hits = set(range(len(needs)))
    while open_hits:
        total = sum(weights[number] for number in open_hits)
        part = {number: int(room * weights[number] / total) for number in open_hits}
        settled = {number for number in open_hits if needs[number] <= part[number]}
        if not settled:
            for number in open_hits:
                given[number] = part[number]
            break
        for number in settled:
            given[number] = needs[number]
            room -= needs[number]
        open_hits -= settled
    return given


def leads_clearly(hits: Sequence[Hit]) -> bool:
    """Whether the first of several hits is closer to the question than every other by
    :data:`CLEAR_LEAD` or more: it then gets :data:`LEADER_WEIGHT` shares, and recall shows its
    item's next passage with it, as it does for a lone hit."""
    return len(hits) > 1 and all(hits[0].similarity - hit.similarity >= CLEAR_LEAD for hit in hits[1:])


def _weights(hits: list[Hit]) -> list[float]:
    weights = [1.0] * len(hits)
    if leads_clearly(hits):
        weights[0] = LEADER_WEIGHT
    return weights


def fit_budget(
    answer: Answer, question: str = "", budget: int = BUDGET_TOKENS, anchors: dict[str, int] | None = None
) -> Answer:
    """``answer`` with excerpts shortened so that its rendering stays within ``budget`` tokens
    (the module docstring gives the rules). ``anchors`` maps a passage's flat text to where its
    excerpt starts (by meaning)."""
    anchors = anchors or {}
    hits = list(answer.hits)
    while hits:
        bare = render_answer(Answer(tuple(attrs.evolve(hit, text="") for hit in hits)), note=True)
        room = (budget - approx_tokens(bare)) * 4 - 3 * len(hits)  # the excerpts' indentation
        needs = [len(compact_tables(flat(hit.text))[0]) for hit in hits]
        given = shares(needs, room, _weights(hits))
        enough = all(size >= min(MIN_SHARE, need) for size, need in zip(given, needs, strict=True))
        if len(hits) == 1 or enough:
            trimmed = tuple(
                attrs.evolve(hit, text=excerpt(hit.text, question, max(size, MIN_SHARE),
                                               anchors.get(flat(hit.text))))
                for hit, size in zip(hits, given, strict=True)
            )
            return Answer(trimmed, _related_that_fit(trimmed, answer.related, budget))
        hits.pop()
    return Answer((), answer.related)


def _related_that_fit(hits: tuple[Hit, ...], related: tuple[Related, ...], budget: int
                      ) -> tuple[Related, ...]:
    kept: list[Related] = []
    for item in related:
        if approx_tokens(render_answer(Answer(hits, (*kept, item)))) > budget:
            break
        kept.append(item)
    return tuple(kept)


NOTHING = "Nothing relevant in the sources."
NOTHING_YET = "Nothing relevant in the sources indexed so far."


def render_answer(answer: Answer, note: bool = False) -> str:
    """The answer as the MCP tool and the hook return it: Markdown, or one line for silence.

    While a source's first build runs, one more line says so (``answer.notes``), after the
    passages or after the line for silence. When an excerpt is cut (or ``note`` is true, to
    count it in), a line names the ``read`` tool that returns the rest.
    """
    building = ("Still indexing: " + "; ".join(answer.notes) + ".") if answer.notes else ""
    if answer.silent:
        return f"{NOTHING_YET} {building}" if building else NOTHING
    blocks = []
    for number, hit in enumerate(answer.hits, start=1):
        lines = [f"{number}. **{_header(hit)}**", "   " + " · ".join(_meta(hit))]
        if hit.text:
            lines.append("   " + hit.text)
        blocks.append("\n".join(lines))
    text = "\n\n".join(blocks)
    if answer.related:
        text += "\n\nRelated:\n" + "\n".join(map(_related_line, answer.related))
    if note or any(hit.text.endswith("…") or hit.text.startswith("…") for hit in answer.hits):
        text += "\n\n" + READ_NOTE
    if building:
        text += "\n\n" + building
    return text
