"""The protocol schemas and the kernel agree, row by row, on the table of good and bad messages.

``schemas/examples/connector-messages.json`` (format documented at the top of
``docs/connector-protocol.md``) is shared with the SDK's tests, so every validator is held to the
same cases.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from referencing import Registry, Resource

from passageway.kernel.connector.lines import parse_lines
from passageway.kernel.records import (
    CheckReply,
    ListEntry,
    converter,
    item_from_json,
    item_to_json,
    validate_connector_message,
    validate_embedder_message,
)

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "schemas"
TABLE = SCHEMAS / "examples" / "connector-messages.json"
ROWS = json.loads(TABLE.read_text(encoding="utf-8"))
SCHEMA_FILES = sorted(SCHEMAS.glob("*.schema.json"))
MODES = {"checkReply": "check", "listEntry": "list", "item": "fetch"}


def schema_of(row: dict) -> str:
    return row.get("schema", "connector-protocol")


def row_id(row: dict) -> str:
    return f"{schema_of(row).split('-')[0]}.{row['definition']}: {row['why'][:60]}"


def load(name: str) -> dict:
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8"))


def file_validator(name: str, definition: str) -> jsonschema.Draft202012Validator:
    """A validator built from the file on disk alone, reaching the definition through its $id."""
    schema = load(name)
    registry = Registry().with_resource(schema["$id"], Resource.from_contents(schema))
    wrapper = {"$schema": schema["$schema"], "$ref": f"{schema['$id']}#/$defs/{definition}"}
    return jsonschema.Draft202012Validator(wrapper, registry=registry)


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=lambda path: path.name)
def test_the_schema_files_are_valid_draft_2020_12(path):
    schema = json.loads(path.read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    for name in schema["$defs"]:
        jsonschema.Draft202012Validator.check_schema({"$defs": schema["$defs"], "$ref": f"#/$defs/{name}"})


def test_the_table_has_the_documented_shape():
    assert len(ROWS) >= 25
    assert sum(row["valid"] for row in ROWS) >= 10 and sum(not row["valid"] for row in ROWS) >= 15
    for row in ROWS:
        assert set(row) <= {"definition", "message", "valid", "why", "schema"}, row
        assert isinstance(row["valid"], bool) and row["why"].strip()
        assert row["definition"] in load(schema_of(row))["$defs"], row


def test_every_message_definition_has_good_and_bad_rows():
    connector_messages = {"checkReply", "listEntry", "fetchRequest", "item"}
    for definition in connector_messages:
        verdicts = {row["valid"] for row in ROWS if row["definition"] == definition}
        assert verdicts == {True, False}, definition


def test_every_item_field_has_a_bad_row():
    """Each field of the item record is named by the `why` of at least one refused item."""
    properties = load("connector-protocol")["$defs"]["item"]["properties"]
    named = {word for row in ROWS if row["definition"] == "item" and not row["valid"]
             for word in row["why"].replace(",", " ").split()}
    assert set(properties) <= named, set(properties) - named


@pytest.mark.parametrize("row", ROWS, ids=row_id)
def test_the_schema_file_decides_as_the_table_says(row):
    errors = list(file_validator(schema_of(row), row["definition"]).iter_errors(row["message"]))
    assert (not errors) == row["valid"], [error.message for error in errors]


@pytest.mark.parametrize("row", ROWS, ids=row_id)
def test_the_kernel_decides_as_the_schema_file(row):
    if schema_of(row) == "embedder-protocol":
        errors = validate_embedder_message(row["definition"], row["message"])
        assert (not errors) == row["valid"], errors
        return
    errors = validate_connector_message(row["definition"], row["message"])
    assert (not errors) == row["valid"], errors
    if not row["valid"]:
        assert all(isinstance(error, str) and error for error in errors)
        return
    # A valid message also becomes a record, and an item survives the round trip unchanged.
    if row["definition"] == "item":
        item = item_from_json(row["message"])
        assert item.id == row["message"]["id"]
        again = item_to_json(item)
        assert validate_connector_message("item", again) == []
        assert item_from_json(again) == item
    elif row["definition"] == "listEntry":
        assert converter.structure(row["message"], ListEntry).id == row["message"]["id"]
    elif row["definition"] == "checkReply":
        assert converter.structure(row["message"], CheckReply).count == row["message"]["count"]


@pytest.mark.parametrize("row", [r for r in ROWS if r["definition"] in MODES], ids=row_id)
def test_the_runner_accepts_exactly_the_valid_lines(row):
    """What the connector runner does with the row as one printed line of its mode."""
    from passageway.kernel.connector.lines import LineProblem

    line = json.dumps(row["message"]).encode()
    refused_anyway = row["definition"] == "checkReply" and row["message"].get("protocol", "1") != "1"
    try:
        parsed = parse_lines([line], 1, MODES[row["definition"]])
    except LineProblem as problem:
        assert not row["valid"] or refused_anyway, str(problem)
        assert problem.rule in ("invalid record", "protocol version")
        return
    assert row["valid"] and not refused_anyway
    assert len(parsed) == 1


@pytest.mark.parametrize("row", [r for r in ROWS if schema_of(r) == "connector-protocol"], ids=row_id)
def test_the_runners_compiled_schema_agrees_with_jsonschema(row):
    """The runner checks lines with the schema compiled by fastjsonschema (draft 7); it must
    accept and refuse exactly what jsonschema (draft 2020-12) does."""
    from passageway.kernel.connector.lines import is_valid

    assert is_valid(row["definition"], row["message"]) == row["valid"]


def test_nan_and_infinity_are_not_json():
    from passageway.kernel.connector.lines import LineProblem

    for constant in ("NaN", "Infinity", "-Infinity"):
        line = b'{"id": "a", "title": "A", "url": "", "version": "1", "sections": [], "weight": '
        line += constant.encode() + b"}"
        with pytest.raises(LineProblem) as caught:
            parse_lines([line], 1, "fetch")
        assert caught.value.rule == "malformed line"


def test_a_refused_pattern_says_what_to_send_and_the_line_names_the_item():
    """A value that breaks a ``pattern`` (the anchor, the date) reads as what it is not and what
    to send, not as the regular expression; the SDK words it the same way, for every pattern."""
    from passageway_sdk.schema import PATTERN_HINTS as SDK_HINTS
    from passageway_sdk.schema import message_errors

    from passageway.kernel.connector.lines import LineProblem
    from passageway.kernel.records import PATTERN_HINTS

    patterned = {name for name, part in _properties(load("connector-protocol")) if "pattern" in part}
    assert patterned == set(PATTERN_HINTS) and SDK_HINTS == PATTERN_HINTS
    record = {"id": "guide.md", "title": "G", "url": "", "version": "1",
              "sections": [{"text": "x", "anchor": "custom id"}]}
    expected = f"sections/0/anchor: 'custom id' {PATTERN_HINTS['anchor']}"
    assert validate_connector_message("item", record) == [expected]
    assert message_errors("item", record) == [expected.replace("'custom id'", '"custom id"')]
    with pytest.raises(LineProblem) as caught:
        parse_lines([json.dumps(record).encode()], 1, "fetch")
    assert str(caught.value) == f"item 'guide.md' is not valid: {expected}"
    assert "give the id without '#'" in str(caught.value)


def _properties(schema: dict) -> list[tuple[str, dict]]:
    """Every ``(name, subschema)`` of a property in the schema, with ``$ref`` targets followed."""
    found = []
    for definition in schema["$defs"].values():
        for name, part in definition.get("properties", {}).items():
            target = part["$ref"].rsplit("/", 1)[-1] if "$ref" in part else None
            found.append((name, schema["$defs"][target] if target else part))
    return found
