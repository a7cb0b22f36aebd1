"""The rest on request: the ``read`` tool's text, the whole section an excerpt was cut from.

An answer shows each hit cut to its share of 400 tokens; when the cut left out what Claude needs,
it asks for the rest with the source and the item the answer named, and the heading the hit was
shown under (``section``). What comes back is the item's passages, in order, as indexed (their
Markdown, line breaks and code blocks kept), within :data:`READ_CHARS` characters:

* with ``section``: the passages of that section (all parts of a section that was split), found
  by its heading as the answer showed it, in full (``Setup › Linux``), by its last part
  (``Linux``), or with the item's title in front (``Guide › Setup › Linux``), ignoring case;
* without: the whole item, from its first passage.

An item named with a section's anchor (``guide.md#install``, as an answer shows a section whose
heading has an id) is read as the item before the ``#`` when no item has the whole name.

Only what the index holds is read, so the same sources, items and text that ``recall`` may show
are the ones ``read`` shows; an unknown source, item or section is an error that says what to
pass instead. The title line, the address and the closing note count in :data:`READ_CHARS`, and
names and addresses are bounded and made harmless as in an answer
(:mod:`passageway.kernel.query.rendering`); an error quotes at most :data:`QUOTED_CHARS` of what
was passed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from passageway.kernel.errors import PassagewayError
from passageway.kernel.query.rendering import MAX_ID_CHARS, shown, shown_url, unescaped, without_controls
from passageway.kernel.store import Store

READ_CHARS = 8000
"""The most characters one ``read`` returns, its title line and note included (about 2,000 tokens)."""

QUOTED_CHARS = 200
"""The most characters of a source, item or section an error quotes back."""

HEADINGS_LISTED = 12
"""How many of an item's section headings an error or a cut text names."""


class ReadError(PassagewayError):
    """A ``read`` the index cannot answer: an unknown source, item or section."""


def _folded(text: str) -> str:
    return " ".join(text.casefold().split())


def _matches(heading: str | None, title: str, section: str) -> bool:
    if heading is None:
        return False
    wanted = _folded(section)
    whole = _folded(heading)
    return wanted in (whole, _folded(heading.split(" › ")[-1]), _folded(f"{title} › {heading}"))


def _headings(rows: Sequence[tuple[int, str | None, str, str]]) -> list[str]:
    return list(dict.fromkeys(heading for _, heading, _, _ in rows if heading))


async def read_item(stores: Mapping[str, Store], source: str, item_id: str, section: str | None = None,
                    limit: int = READ_CHARS) -> str:
    """The Markdown the ``read`` tool returns for ``item_id`` of ``source`` (see the module).

    :raises ReadError: the source is not configured, the item is not indexed, or it has no
        section ``section``.
    """
    store = stores.get(source)
    if store is None:
        known = ", ".join(shown(name) for name in sorted(stores)) or "none"
        raise ReadError(f"no source {_quoted(source)}; pass a source an answer named (configured: {known})")
    found = []
    # As given, then as the answer escaped it; an answer names a section with an anchor as
    # ``item#anchor``: the item is before the #.
    for wanted in dict.fromkeys((item_id, unescaped(item_id))):
        found = found or await store.items([wanted])
        if not found and "#" in wanted:
            found = await store.items([wanted.rsplit("#", 1)[0]])
    if not found:
        raise ReadError(f"source {_quoted(source)} holds no item {_quoted(item_id)}; pass the item an "
                        "answer named")
    item_id = found[0].item_id
    item = found[0]
    rows = sorted(await store.passages_of(item_id))
    if section is not None and section.strip():
        chosen = [row for row in rows if _matches(row[1], item.title, section)
                  or _matches(row[1], item.title, unescaped(section))]
        if not chosen:
            headings = _listed(_headings(rows)) or "none"
            raise ReadError(f"item {_quoted(item_id)} has no section {_quoted(section)}; its sections: "
                            f"{headings}")
        rows = chosen
    heading = rows[0][1] if section and rows else None
    place = " › ".join(shown(part) for part in (item.title, heading) if part)
    lines = [f"**{place}** ({shown(source)}: {shown(item_id, MAX_ID_CHARS)})"]
    if shown_url(item.url):
        lines.append(shown_url(item.url))
    others = _listed(_headings(rows)) if not section else ""
    more = f" Pass `section` to read one section: {others}." if others else ""
    note = f"(cut here: {10**12} more characters.{more})"  # the longest it can be, for the room
    room = limit - len("\n".join(lines)) - len(note) - 4
    text, left = _within(without_controls("\n\n".join(row[2] for row in rows)), max(room, 0))
    lines += ["", text]
    if left:
        lines += ["", f"(cut here: {left} more characters.{more})"]
    return "\n".join(lines)


def _quoted(value: str) -> str:
    """``value`` quoted in an error, at most :data:`QUOTED_CHARS` of it, on one line."""
    return repr(shown(value, QUOTED_CHARS))


def _listed(headings: list[str]) -> str:
    """The first :data:`HEADINGS_LISTED` headings, each bounded, for an error or a note."""
    return "; ".join(shown(heading) for heading in headings[:HEADINGS_LISTED])


def _within(text: str, limit: int) -> tuple[str, int]:
    """``text`` cut to at most ``limit`` characters at the last line break (else space) before it,
    and how many characters were left out."""
    if len(text) <= limit:
        return text, 0
    piece = text[:limit]
    end = piece.rfind("\n")
    if end < limit // 2:
        end = piece.rfind(" ")
    if end < limit // 2:
        end = limit
    return piece[:end].rstrip(), len(text) - end
