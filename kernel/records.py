"""The records that flow through passageway, and the one converter between them and JSON.

Protocol records (what connectors send) mirror the JSON Schemas in ``schemas/``;
:func:`validate_connector_message` checks a decoded line against the schema before
:data:`converter` turns it into a record, so a record that exists here is always valid.

Kernel records (:class:`Passage`, :class:`Hit`, :class:`Answer`) are what the stages hand each
other; they never cross a process boundary except as the JSON of an answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

import attrs
import cattrs

if TYPE_CHECKING:
    from passageway.kernel.ranking import Ranker

PROTOCOL_VERSION = "1"

# ---------------------------------------------------------------------------------------------
# Connector protocol
# ---------------------------------------------------------------------------------------------


@attrs.frozen
class Section:
    """A part of an item: its heading (or trail of headings), its text, and the id of its heading
    in the page (``anchor``, from ``## Install {#install}``), which the answer links the section
    with: the item's url with ``#anchor``. ``None`` when the heading has no id."""

    text: str
    heading: str | None = None
    anchor: str | None = None


@attrs.frozen
class Item:
    """One item a connector reports, as ``fetch`` and ``changed`` print it."""

    id: str
    title: str
    url: str
    version: str
    sections: tuple[Section, ...] = ()
    weight: float = 1.0
    path: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    updated: str | None = None


@attrs.frozen
class ListEntry:
    """One line of ``list``: an item that exists, and its version."""

    id: str
    version: str


@attrs.frozen
class CheckReply:
    """The line ``check`` prints."""

    ok: bool
    count: int
    protocol: str = PROTOCOL_VERSION


# ---------------------------------------------------------------------------------------------
# Embedder protocol
# ---------------------------------------------------------------------------------------------

EmbedKind = Literal["query", "passage"]
"""What an embedder is asked to embed: a question or a passage (its ``kind``)."""


# ---------------------------------------------------------------------------------------------
# Kernel records
# ---------------------------------------------------------------------------------------------


@attrs.frozen
class Passage:
    """A piece of an item small enough to embed: one section, or part of an oversize one.

    ``embedding_input`` is ``title › path › heading: text``; ``digest`` is its SHA-256, so a stored
    vector is reused exactly when that text is unchanged. ``anchor`` is its section's (not part of
    the embedding input: the same text under another id keeps its vector).
    """

    item_id: str
    ordinal: int
    heading: str | None
    text: str
    embedding_input: str
    digest: str
    anchor: str | None = None


@attrs.frozen
class Hit:
    """One passage that passed the gate, with what an answer shows about it."""

    source: str
    item_id: str
    title: str
    url: str
    heading: str | None
    text: str
    score: float
    similarity: float
    path: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    updated: str | None = None
    links: tuple[str, ...] = ()
    also_in: tuple[str, ...] = ()
    """Other sources holding the same content, left out so it fills one slot (kernel/query/duplicates.py)."""
    anchor: str | None = None
    """The id of the passage's section in its page: the answer links ``url#anchor``."""


@attrs.frozen
class Related:
    """An indexed item that a hit links to."""

    source: str
    item_id: str
    title: str
    url: str


@attrs.frozen
class Answer:
    """What recall returns: up to three hits and up to three related items, or silence.

    ``notes`` are lines the reader should see whatever was found: one per source whose first
    build is still running ("corpus-en: 48 of 96 passages searchable by meaning so far"), so that an
    answer given from a half-built index does not read as a complete one.
    """

    hits: tuple[Hit, ...] = ()
    related: tuple[Related, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def silent(self) -> bool:
        return not self.hits


# ---------------------------------------------------------------------------------------------
# The converter and the schemas
# ---------------------------------------------------------------------------------------------

converter = cattrs.Converter(forbid_extra_keys=True, omit_if_default=False)
"""Structures validated JSON into the records above and back. Unknown keys are an error."""


@cache
def load_schema(name: str) -> dict[str, Any]:
    """Read ``schemas/<name>.schema.json`` as shipped inside the package."""
    text = resources.files("passageway.schemas").joinpath(f"{name}.schema.json").read_text("utf-8")
    return json.loads(text)


@cache
def _validator(schema_name: str, definition: str) -> Any:
    import jsonschema

    schema = load_schema(schema_name)
    # Validate against one definition while keeping the document's $defs reachable.
    sub = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"}
    jsonschema.Draft202012Validator.check_schema(sub)
    return jsonschema.Draft202012Validator(sub)


PATTERN_HINTS = {
    "anchor": "is not a heading id: give the id without '#', with no spaces (letters, digits, "
              "- _ . : ~ and escapes such as %20), or leave anchor out",
    "updated": "is not an ISO 8601 date or time such as 2026-10-28 or 2026-10-28T09:00:00Z",
}
"""What a value that breaks a field's ``pattern`` is, and what to send instead, by field name:
the schema's regular expression itself tells a connector author little."""


def schema_errors(schema_name: str, definition: str, value: Any) -> list[str]:
    """Every way ``value`` breaks ``$defs/<definition>`` of a schema, as short readable lines."""
    validator = _validator(schema_name, definition)
    messages = []
    for error in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(part) for part in error.absolute_path) or "the record"
        field = error.absolute_path[-1] if error.absolute_path else None
        if error.validator == "pattern" and field in PATTERN_HINTS:
            messages.append(f"{where}: {_short(repr(error.instance), 80)} {PATTERN_HINTS[str(field)]}")
        else:
            messages.append(f"{where}: {_short(error.message)}")
    return messages


def _short(message: str, limit: int = 200) -> str:
    return message if len(message) <= limit else message[: limit - 1] + "…"


def validate_connector_message(definition: str, value: Any) -> list[str]:
    """Schema errors of one connector message (``checkReply``, ``listEntry``, ``item``, …)."""
    return schema_errors("connector-protocol", definition, value)


def validate_embedder_message(definition: str, value: Any) -> list[str]:
    """Schema errors of one embedder message (``infoReply``, ``embedReply``, ``errorReply``, …)."""
    return schema_errors("embedder-protocol", definition, value)


def item_from_json(value: dict[str, Any]) -> Item:
    """An :class:`Item` from a record that already passed :func:`validate_connector_message`."""
    return converter.structure(value, Item)


def item_to_json(item: Item) -> dict[str, Any]:
    """The protocol form of an item, with optional fields left out when they hold the default."""
    full = converter.unstructure(item)
    defaults: dict[str, Any] = {"weight": 1.0, "path": [], "links": [], "labels": [], "updated": None}
    record = {key: value for key, value in full.items() if key not in defaults or value != defaults[key]}
    record["sections"] = [_section_json(section) for section in item.sections]
    return record


def _section_json(section: Section) -> dict[str, Any]:
    record: dict[str, Any] = {"heading": section.heading, "text": section.text}
    if section.anchor is not None:
        record["anchor"] = section.anchor
    return record


# ---------------------------------------------------------------------------------------------
# The query path's request
# ---------------------------------------------------------------------------------------------


def _pairs(value: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    return tuple((source, item_id) for source, item_id in value)


@attrs.frozen
class Question:
    """What :meth:`passageway.kernel.app.Kernel.recall` is asked, by every door, eval and bench.

    What a caller may vary is a field here, so the difference between two callers is written in
    one place: the hook sets ``only_questions``, ``exclude_items`` and ``boost_words``; the MCP
    tool sets none of them; ``passageway eval`` sets ``ranker`` and ``threshold``.

    - ``prompt``: the text as the client sent it; recall reduces it to the question it asks.
    - ``only_questions``: answer silence without a search when the reduced prompt is not worth one
      (a slash command, "ok", a short follow-up without a content word). The hook asks for it
      because it sends every prompt; a model calls the MCP tool with a question.
    - ``exclude_items``: ``(source, item_id)`` pairs not to return (the session's items already shown).
    - ``boost_words``: words that lift an item whose title, path or labels contain one (the hook's
      folder names).
    - ``ranker``: a ranker in place of the configured one (``passageway eval --ranker``).
    - ``threshold``: the gate's ``min_similarity`` in place of the embedder's (``--threshold``);
      the cross-language offset stays the embedder's.
    - ``excerpt_rule``: how a hit's excerpt is cut, ``rule(text, question, limit, windows)``, in
      place of :func:`passageway.kernel.query.rendering.excerpt` (a bench tries others).
    """

    prompt: str
    only_questions: bool = False
    exclude_items: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=_pairs)
    boost_words: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    ranker: Ranker | None = None
    threshold: float | None = None
    excerpt_rule: Callable[[str, str, int, Any], str] | None = None
