"""The answer as the model reads it: excerpts cut to the 400-token budget, and the Markdown the
MCP tool and the hook return.

Tokens are approximated as characters / 4 (:func:`approx_tokens`), which is close for English and
German prose with the e5 tokenizer's vocabulary and needs no tokenizer at query time. The
budget is shared evenly by the hits after their fixed parts (header, link, related items); where
each excerpt starts is chosen by :mod:`passageway.kernel.query.excerpts`.
"""

from __future__ import annotations

import attrs

from passageway.kernel.index.windows import flat
from passageway.kernel.query.excerpts import cut, word_start
from passageway.kernel.records import Answer, Hit

BUDGET_TOKENS = 400
"""The whole answer (passages, their headers and the related items) stays under about this."""


def approx_tokens(text: str) -> int:
    """Tokens, estimated as characters / 4 (rounded up)."""
    return -(-len(text) // 4)


def excerpt(text: str, question: str, limit: int, anchor: int | None = None) -> str:
    """At most ``limit`` characters of ``text``, around what answers the question.

    The excerpt starts at ``anchor`` (where the passage's window most similar to the question
    starts, :func:`passageway.kernel.query.excerpts.anchors`) or, without one, at the sentence that
    holds the most distinct content words of the question; it starts earlier when the rest would
    not fill ``limit``, and ends at a word boundary with "…" when cut.
    """
    text = flat(text)
    if len(text) <= limit:
        return text
    return cut(text, word_start(text, question, limit) if anchor is None else anchor, limit)


def _header(hit: Hit) -> str:
    place = " › ".join(part for part in (hit.title, hit.heading) if part)
    return place


def fit_budget(
    answer: Answer, question: str = "", budget: int = BUDGET_TOKENS, anchors: dict[str, int] | None = None
) -> Answer:
    """``answer`` with excerpts shortened so that its rendering stays within ``budget`` tokens.

    Every hit keeps its title, link and a share of the text; the related items are kept whole
    (they are one line each). The excerpt share is what remains of the budget after the fixed
    parts, split evenly; a share below 120 characters drops the lowest-ranked hit instead.
    ``anchors`` maps a passage's flat text to where its excerpt starts (by meaning).
    """
    anchors = anchors or {}
    hits = list(answer.hits)
    while hits:
        bare = Answer(tuple(attrs.evolve(hit, text="") for hit in hits), answer.related)
        fixed = approx_tokens(render_answer(bare))
        share = (budget - fixed) * 4 // len(hits)
        if share >= 120 or len(hits) == 1:
            share = max(share, 120)
            trimmed = tuple(
                attrs.evolve(hit, text=excerpt(hit.text, question, share, anchors.get(flat(hit.text))))
                for hit in hits
            )
            return Answer(trimmed, answer.related)
        hits.pop()
    return Answer((), answer.related)


NOTHING = "Nothing relevant in the sources."
NOTHING_YET = "Nothing relevant in the sources indexed so far."


def render_answer(answer: Answer) -> str:
    """The answer as the MCP tool and the hook return it: Markdown, or one line for silence.

    While a source's first build runs, one more line says so (``answer.notes``), after the
    passages or after the line for silence.
    """
    building = ("Still indexing: " + "; ".join(answer.notes) + ".") if answer.notes else ""
    if answer.silent:
        return f"{NOTHING_YET} {building}" if building else NOTHING
    blocks = []
    for number, hit in enumerate(answer.hits, start=1):
        lines = [f"{number}. **{_header(hit)}**"]
        meta = [hit.url] if hit.url else []
        if hit.path:
            meta.append(" / ".join(hit.path))
        if hit.updated:
            meta.append(f"updated {hit.updated}")
        if hit.also_in:
            meta.append("also in: " + ", ".join(hit.also_in))
        if meta:
            lines.append("   " + " · ".join(meta))
        if hit.text:
            lines.append("   " + hit.text)
        blocks.append("\n".join(lines))
    text = "\n\n".join(blocks)
    if answer.related:
        related = "\n".join(f"- {item.title} ({item.url})" for item in answer.related)
        text += "\n\nRelated:\n" + related
    if building:
        text += "\n\n" + building
    return text
