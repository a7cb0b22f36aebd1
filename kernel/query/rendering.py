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
   room another needs). A share under :data:`MIN_SHARE` characters drops the lowest-ranked hit
   instead. A lone hit has the whole budget, and so, nearly, has a first hit that clearly leads
   the others (:data:`CLEAR_LEAD`): fewer, fuller excerpts, the others shown in
   :data:`MIN_SHARE` characters each. Each hit's text is its passage and its item's most similar
   other candidate passage (recall, :func:`passageway.kernel.query.excerpts.with_neighbour`).
3. **Related items come last**, one line each, as many as still fit.
4. **What was cut can be read**: when an excerpt is cut, one closing line names the ``read`` tool,
   which returns the whole section (docs/server.md).

Where each excerpt starts is chosen by :mod:`passageway.kernel.query.excerpts`.

Every name and address an answer shows comes from a source, so each is bounded and made harmless
where it is rendered (:func:`shown`, :func:`shown_url`, :func:`shown_anchor`): no control
character (a newline would start a line of its own), brackets and angle brackets escaped (the
``read`` tool takes an escaped name back), titles and headings cut to :data:`MAX_NAME_CHARS`, item
ids to :data:`MAX_ID_CHARS`, an anchor percent-encoded, and an address shown only when it is
``http(s)`` and at most :data:`MAX_URL_CHARS` long, with whatever Markdown or HTML could read as
markup percent-encoded. They are counted in the budget like the rest of the header.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from urllib.parse import quote, urlsplit

import attrs

from passageway.kernel.query.excerpts import HitWindows, Windows, best_start, cut, tidy, unit_starts
from passageway.kernel.records import Answer, Hit, Related
from passageway.kernel.text.windows import SHORT_PASSAGE, flat

BUDGET_TOKENS = 400
"""The whole answer (passages, their headers and the related items) stays under about this."""

MIN_SHARE = 120
"""Fewest characters of excerpt a hit is shown with; below it the lowest-ranked hit is dropped."""

CLEAR_LEAD = 0.02
"""A first hit whose similarity to the question exceeds every other hit's by at least this much
leads clearly: it gets the budget of three and the others :data:`MIN_SHARE` characters each.
Chosen from 0.01 to 0.03 on the tuning projects of corpus/docs (docs/ranking-and-gate.md): with a
lead this large the right item is almost always the first hit."""

READ_NOTE = "Cut excerpts (…): the `read` tool returns the rest (its source, item and heading, as above)."


MAX_NAME_CHARS = 150
"""The most characters of a title, a heading, a breadcrumb or a source name an answer shows."""
MAX_ID_CHARS = 200
"""The most characters of an item id an answer shows (a longer one is cut with "…")."""
MAX_URL_CHARS = 300
"""An address longer than this is not shown (a cut address would not open); the item names the hit."""
MAX_ANCHOR_CHARS = 100
"""A section id longer than this is not shown."""

_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_EXCERPT_CONTROLS = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_MARKUP = re.compile(r"([\[\]<>])")
_ESCAPED = re.compile(r"\\([\[\]<>])")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
"""A Markdown code span: a run of backticks, text, and a run of the same length."""
_HOST = re.compile(r"[A-Za-z0-9.\-:@\[\]%_~]+")
_URL_SAFE = "!#$%&'()*+,-./:;=?@_~"


def shown(text: str, limit: int = MAX_NAME_CHARS) -> str:
    """``text`` as an answer shows a name: control characters as spaces, cut to ``limit``
    characters with "…", and its brackets and angle brackets escaped with a backslash, so that a
    name cannot open a link or a tag (``read`` takes an escaped item or heading back:
    :func:`unescaped`). Inside a code span (```<module>.disabled```) nothing opens a link or a
    tag and a backslash would be shown, so a code span is left as it is."""
    text = _CONTROLS.sub(" ", text[: limit + 1])
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    pieces, done = [], 0
    for span in _CODE_SPAN.finditer(text):  # a code span shows its brackets as they are
        pieces += [_MARKUP.sub(r"\\\1", text[done : span.start()]), span.group(0)]
        done = span.end()
    return "".join([*pieces, _MARKUP.sub(r"\\\1", text[done:])])


def unescaped(text: str) -> str:
    """A name as it was before :func:`shown` escaped its brackets."""
    return _ESCAPED.sub(r"\1", text)


def shown_anchor(anchor: str | None) -> str:
    """``#anchor`` as a link's fragment: letters, digits and ``-._~`` kept, the rest
    percent-encoded; ``""`` for none, or for one longer than :data:`MAX_ANCHOR_CHARS`."""
    if not anchor or len(anchor) > MAX_ANCHOR_CHARS:
        return ""
    return "#" + "".join(
        char if (char.isalnum() and unicodedata.category(char)[0] in "LN") or char in "-._~"
        else quote(char, safe="")
        for char in anchor
    )


def shown_url(url: str) -> str:
    """``url`` as an answer shows it, or ``""`` when it is not one a reader can open from there:
    not ``http(s)``, longer than :data:`MAX_URL_CHARS`, or with a host no browser would read.
    Characters that Markdown or HTML could read as markup (brackets, angle brackets, quotes,
    spaces, control characters) and non-ASCII ones are percent-encoded."""
    if not url or len(url) > MAX_URL_CHARS:
        return ""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc or not _HOST.fullmatch(parts.netloc):
        return ""
    start = f"{parts.scheme}://{parts.netloc}"
    if url[: len(start)].lower() != start.lower():  # spaces before it, backslashes: not as written
        return ""
    rest = url[len(start):]
    shown_address = f"{parts.scheme}://{parts.netloc}{quote(rest, safe=_URL_SAFE)}"
    return shown_address if len(shown_address) <= MAX_URL_CHARS else ""


def without_controls(text: str) -> str:
    """An excerpt with its control characters as spaces (its line breaks kept)."""
    return _EXCERPT_CONTROLS.sub(" ", text)


def approx_tokens(text: str) -> int:
    """Tokens, estimated as characters / 4 (rounded up)."""
    return -(-len(text) // 4)


def excerpt(text: str, question: str, limit: int, windows: HitWindows | Windows | None = None) -> str:
    """At most ``limit`` characters of ``text``, around what answers the question.

    The excerpt is anchored at the unit (a sentence, a line of code, a table row, a line of a
    list) whose window is most similar to the question, ``windows`` (from
    :func:`passageway.kernel.query.excerpts.anchors`), with a little added for the rare words of
    the question it holds (:func:`passageway.kernel.query.excerpts.best_start`); without windows,
    the words alone choose. It starts up to a third of ``limit`` before that unit, earlier when
    the rest would not fill ``limit``, or elsewhere to show the hit's own passage whole when that
    is at most ``SHORT_PASSAGE`` characters and would be left out (``windows.own`` of a
    :class:`~passageway.kernel.query.excerpts.HitWindows`; plain windows know no own passage); its
    cuts fall between units, it ends at a word boundary with "…" when cut, and markup that shows
    nothing is left out (:func:`passageway.kernel.query.excerpts.tidy`).
    """
    shown, moved = tidy(text)
    if len(shown) <= limit:
        return shown
    starts = unit_starts(text)
    start = best_start(text, question, windows, starts)
    own = windows.own if isinstance(windows, HitWindows) else None
    keep = (moved(own[0]), moved(own[1])) if own is not None else None
    if keep is not None and keep[1] - keep[0] > SHORT_PASSAGE:
        keep = None
    return cut(shown, moved(start), limit, starts=sorted({moved(unit) for unit in starts}), keep=keep)


def _header(hit: Hit) -> str:
    heading = hit.heading
    if heading and hit.title and heading.startswith(hit.title + " › "):
        heading = heading[len(hit.title) + 3 :]  # a trail that repeats the title
    return " › ".join(shown(part) for part in (hit.title, heading) if part)


def _named(source: str, item_id: str) -> str:
    """``source: item``, as the ``read`` tool takes them back."""
    return f"{shown(source)}: {shown(item_id, MAX_ID_CHARS)}"


def _meta(hit: Hit) -> list[str]:
    # The section's anchor goes on the address when one is shown (https://…/page#install), else
    # on the item (notes: guide.md#install), which is then the only place the answer names.
    # A file:// address is not shown: the item id names the file.
    anchor = shown_anchor(hit.anchor)
    url = shown_url(hit.url.split("#", 1)[0] if anchor else hit.url)
    if url and hit.url != hit.item_id:
        meta = [_named(hit.source, hit.item_id), url + anchor]
    else:  # a part of a long page already names its section's anchor (notes: ref.md#aws)
        named = _named(hit.source, hit.item_id)
        meta = [named if anchor and named.endswith(anchor) else named + anchor]
    if hit.path and not hit.item_id.startswith("/".join(hit.path) + "/"):
        meta.append(shown(" / ".join(hit.path)))
    if hit.updated:
        meta.append(f"updated {shown(hit.updated[:10])}")
    if hit.also_in:
        meta.append("also in: " + shown(", ".join(hit.also_in)))
    return meta


def _related_line(item: Related) -> str:
    where = shown_url(item.url) or _named(item.source, item.item_id)
    return f"- {shown(item.title)} ({where})"


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
    :data:`CLEAR_LEAD` or more: it then gets nearly the whole budget (:func:`_sizes`)."""
    return len(hits) > 1 and all(hits[0].similarity - hit.similarity >= CLEAR_LEAD for hit in hits[1:])


def _sizes(hits: Sequence[Hit], needs: list[int], room: int) -> list[int]:
    """Characters for each hit's excerpt: a clear leader takes what the others' short excerpts
    (:data:`MIN_SHARE` each) leave; otherwise the hits share ``room`` equally, by need."""
    if leads_clearly(hits):
        brief = [min(need, MIN_SHARE) for need in needs[1:]]
        first = min(needs[0], room - sum(brief))
        if first >= min(MIN_SHARE, needs[0]):
            return [first, *shares(needs[1:], room - first, [1.0] * len(brief))]
    return shares(needs, room, [1.0] * len(hits))


ExcerptRule = Callable[[str, str, int, "HitWindows | Windows | None"], str]
"""How an excerpt is cut: ``rule(text, question, limit, windows)``, as :func:`excerpt` does."""


def fit_budget(
    answer: Answer, question: str = "", budget: int = BUDGET_TOKENS,
    anchors: Mapping[str, HitWindows | Windows] | None = None, rule: ExcerptRule = excerpt,
) -> Answer:
    """``answer`` with excerpts shortened so that its rendering, notes included, stays within
    ``budget`` tokens (the module docstring gives the rules). ``anchors`` maps a hit's flat text
    to its windows and their similarity to the question
    (:func:`passageway.kernel.query.excerpts.anchors`); ``rule`` cuts each excerpt (the one place
    an excerpt is cut; a bench passes another through ``Question.excerpt_rule``)."""
    anchors = anchors or {}
    hits = list(answer.hits)
    while hits:
        bare = render_answer(Answer(tuple(attrs.evolve(hit, text="") for hit in hits), notes=answer.notes),
                             note=True)
        room = (budget - approx_tokens(bare)) * 4 - 3 * len(hits)  # the excerpts' indentation
        needs = [len(tidy(hit.text)[0]) for hit in hits]
        given = _sizes(hits, needs, room)
        enough = all(size >= min(MIN_SHARE, need) for size, need in zip(given, needs, strict=True))
        if len(hits) == 1 or enough:
            trimmed = tuple(
                attrs.evolve(hit, text=rule(hit.text, question, max(size, MIN_SHARE),
                                            anchors.get(flat(hit.text))))
                for hit, size in zip(hits, given, strict=True)
            )
            fitted = Answer(trimmed, notes=answer.notes)
            return attrs.evolve(fitted, related=_related_that_fit(fitted, answer.related, budget))
        hits.pop()
    return Answer((), answer.related, answer.notes)


def _related_that_fit(answer: Answer, related: tuple[Related, ...], budget: int) -> tuple[Related, ...]:
    kept: list[Related] = []
    for item in related:
        if approx_tokens(render_answer(attrs.evolve(answer, related=(*kept, item)))) > budget:
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
            lines.append("   " + without_controls(hit.text))
        blocks.append("\n".join(lines))
    text = "\n\n".join(blocks)
    if answer.related:
        text += "\n\nRelated:\n" + "\n".join(map(_related_line, answer.related))
    if note or any(hit.text.endswith("…") or hit.text.startswith("…") for hit in answer.hits):
        text += "\n\n" + READ_NOTE
    if building:
        text += "\n\n" + building
    return without_controls(text)
