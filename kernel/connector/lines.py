"""The lines of a connector's stdout: decoded, checked against the schema, made records.

Each line must be one JSON object valid against the schema definition of the call's mode
(``schemas/connector-protocol.schema.json``). The schema is compiled once per definition by
``fastjsonschema`` into a plain Python function, fast enough for every line of a large source
(jsonschema needs 0.1 to 0.5 ms a line, seconds for 100,000 list lines); a line it refuses goes
to jsonschema, which names what is wrong. A broken rule is a :class:`LineProblem`, which the
runner turns into a :class:`~passageway.kernel.errors.ConnectorError`.
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import json
from collections.abc import Callable
from typing import Any

from passageway.kernel.records import (
    PROTOCOL_VERSION,
    CheckReply,
    Item,
    ListEntry,
    converter,
    load_schema,
    validate_connector_message,
)
from passageway.kernel.text.not_unicode import SURROGATE_ESCAPE, repair_record

DEFINITIONS = {"check": "checkReply", "list": "listEntry", "fetch": "item", "changed": "item"}
"""The schema definition each mode's lines follow."""
INLINE_PARSE_BYTES = 16 * 1024
"""Larger batches of lines are decoded and validated in a thread."""


class LineProblem(Exception):
    """A rule broken at one line; the runner turns it into a :class:`ConnectorError`."""

    def __init__(self, rule: str, line_number: int, message: str, line: bytes | None = None) -> None:
        super().__init__(message)
        self.rule = rule
        self.line_number = line_number
        self.line = line


async def parse_batch(lines: builtins.list[bytes], first_number: int, mode: str) -> builtins.list[Any]:
    """Decode and validate lines; a large batch goes to a thread so the event loop stays free."""
    if sum(len(line) for line in lines) > INLINE_PARSE_BYTES:
        return await asyncio.to_thread(parse_lines, lines, first_number, mode)
    return parse_lines(lines, first_number, mode)


def parse_lines(lines: builtins.list[bytes], first_number: int, mode: str) -> builtins.list[Any]:
    parsed = []
    for number, line in enumerate(lines, first_number):
        if not line.strip():
            continue  # a blank line carries nothing
        try:
            entry = _parse_line(line, number, mode)
        except RecursionError:
            # json (and the checks after it) recurse per level of nesting; a record nested
            # thousands deep is the connector's mistake, reported like any malformed line.
            raise LineProblem(
                "malformed line", number,
                "the line's JSON is nested too deep to read (thousands of levels); a record never is",
                line,
            ) from None
        parsed.append(entry)
    return parsed


def _parse_line(line: bytes, number: int, mode: str) -> tuple[int, bytes, Any, str | None]:
    """One line as ``(number, line, record or None, note on text that is not Unicode)``."""
    definition = DEFINITIONS[mode]
    record_type: type = {"check": CheckReply, "list": ListEntry}.get(mode, Item)
    try:
        value = json.loads(line, parse_constant=_refuse_constant)
    except UnicodeDecodeError:
        raise LineProblem("malformed line", number, "the line is not UTF-8", line) from None
    except ValueError as error:
        reason = getattr(error, "msg", "not JSON")
        raise LineProblem("malformed line", number, f"the line is not JSON ({reason})", line) from None
    if not isinstance(value, dict):
        raise LineProblem("malformed line", number, "the line is JSON but not an object", line)
    note = None
    if SURROGATE_ESCAPE.search(line):
        value, note = repair_record(value, identity_keys=() if mode == "check" else ("id",))
        if value is None:
            return (number, line, None, note)
    if mode == "check":  # the one check of the connector's protocol version (the sync relies on it)
        protocol = value.get("protocol", PROTOCOL_VERSION)
        if protocol != PROTOCOL_VERSION:
            raise LineProblem(
                "protocol version", number,
                f"the connector speaks protocol {protocol!s:.40}, and this passageway speaks "
                f"protocol {PROTOCOL_VERSION}; use a version of the connector made for protocol "
                f"{PROTOCOL_VERSION}",
            )
    errors = [] if is_valid(definition, value) else validate_connector_message(definition, value)
    if errors:
        problems = "; ".join(errors[:3])
        raise LineProblem("invalid record", number, f"{_what(definition, value)}: {problems}", line)
    try:
        record = converter.structure(value, record_type)
    except RecursionError:
        raise
    except Exception as error:  # the schema and the records disagree: report, never crash
        raise LineProblem("invalid record", number, f"not a valid {definition}: {error}", line) from None
    return (number, line, record, note)


def _what(definition: str, value: dict[str, Any]) -> str:
    """What a refused line is, naming its item when it has an id a reader can find it by."""
    item_id = value.get("id")
    if definition == "item" and isinstance(item_id, str) and item_id:
        return f"item {item_id[:200]!r} is not valid"
    return f"not a valid {definition}"


def _refuse_constant(name: str) -> Any:
    # Python's json accepts NaN and Infinity; JSON does not, and a NaN weight would poison ranking.
    raise ValueError(f"{name} is not JSON")


@functools.cache
def _compiled(definition: str) -> Callable[[Any], Any]:
    import fastjsonschema

    document = load_schema("connector-protocol")
    # The keywords the file uses mean the same in draft 7, which fastjsonschema compiles
    # (tests/test_schemas.py holds the result to the table of good and bad messages).
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$defs": document["$defs"],
        "$ref": f"#/$defs/{definition}",
    }
    return fastjsonschema.compile(schema)  # type: ignore[no-any-return]


def is_valid(definition: str, value: Any) -> bool:
    """Whether ``value`` is valid against ``$defs/<definition>`` of the connector schema."""
    import fastjsonschema

    try:
        _compiled(definition)(value)
    except fastjsonschema.JsonSchemaValueException:
        return False
    return True
