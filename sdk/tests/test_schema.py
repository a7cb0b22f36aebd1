"""The SDK's validator applies the same rule table as the core: the protocol's JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from passageway_sdk import message_errors
from passageway_sdk import schema as sdk_schema

REPOSITORY = Path(__file__).resolve().parents[2]
SCHEMA_PATH = REPOSITORY / "schemas" / "connector-protocol.schema.json"
EXAMPLES_PATH = REPOSITORY / "schemas" / "examples" / "connector-messages.json"


def reference_valid(definition: str, message) -> bool:
    """What jsonschema, the core's validator, says about one message."""
    schema = json.loads(SCHEMA_PATH.read_text("utf-8"))
    sub = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"}
    return jsonschema.Draft202012Validator(sub).is_valid(message)


def item(**changes):
    base = {"id": "a", "title": "A", "url": "", "version": "1", "sections": []}
    base.update(changes)
    return {key: value for key, value in base.items() if value is not ...}


# Our own table, so the agreement is tested even before the shared table exists. Each row:
# (definition, message, valid, why).
ROWS = [
    ("checkReply", {"ok": True, "count": 3}, True, "minimal check"),
    ("checkReply", {"ok": True, "count": 0, "protocol": "1"}, True, "with protocol"),
    ("checkReply", {"ok": True, "count": 2.0}, True, "2.0 is an integer in JSON Schema"),
    ("checkReply", {"ok": False, "count": 3}, False, "ok must be true"),
    ("checkReply", {"ok": 1, "count": 3}, False, "1 is not true"),
    ("checkReply", {"ok": True, "count": -1}, False, "negative count"),
    ("checkReply", {"ok": True, "count": 2.5}, False, "fractional count"),
    ("checkReply", {"ok": True, "count": True}, False, "a boolean is not a count"),
    ("checkReply", {"ok": True, "count": "3"}, False, "count as text"),
    ("checkReply", {"ok": True}, False, "count missing"),
    ("checkReply", {"ok": True, "count": 1, "protocol": 1}, False, "protocol must be text"),
    ("checkReply", {"ok": True, "count": 1, "items": 1}, False, "unknown key"),
    ("checkReply", [], False, "not an object"),
    ("listEntry", {"id": "a", "version": "1"}, True, "minimal entry"),
    ("listEntry", {"id": "x" * 1024, "version": "v" * 256}, True, "longest id and version"),
    ("listEntry", {"id": "x" * 1025, "version": "1"}, False, "id too long"),
    ("listEntry", {"id": "a", "version": "v" * 257}, False, "version too long"),
    ("listEntry", {"id": "", "version": "1"}, False, "empty id"),
    ("listEntry", {"id": "a", "version": ""}, False, "empty version"),
    ("listEntry", {"id": "a"}, False, "version missing"),
    ("listEntry", {"id": 7, "version": "1"}, False, "numeric id"),
    ("listEntry", {"id": "a", "version": "1", "title": "A"}, False, "unknown key"),
    ("fetchRequest", {"id": "a"}, True, "a request"),
    ("fetchRequest", {"id": None}, False, "null id"),
    ("fetchRequest", {}, False, "no id"),
    ("item", item(), True, "minimal item"),
    ("item", item(sections=[{"heading": None, "text": "x"}, {"text": ""}, {"heading": "H", "text": "y"}]),
     True, "sections with null, absent and text headings"),
    ("item", item(weight=0, path=["Ops"], links=["b"], labels=["x"], updated="2026-10-28"), True,
     "every optional field"),
    ("item", item(weight=10.0), True, "largest weight"),
    ("item", item(weight=10.5), False, "weight above 10"),
    ("item", item(weight=-0.1), False, "negative weight"),
    ("item", item(weight=True), False, "a boolean is not a weight"),
    ("item", item(weight="1"), False, "weight as text"),
    ("item", item(title=""), False, "empty title"),
    ("item", item(title=...), False, "title missing"),
    ("item", item(url=None), False, "null url"),
    ("item", item(sections=...), False, "sections missing"),
    ("item", item(sections={"text": "x"}), False, "sections not a list"),
    ("item", item(sections=[{"heading": "H"}]), False, "section without text"),
    ("item", item(sections=[{"heading": 3, "text": "x"}]), False, "numeric heading"),
    ("item", item(sections=[{"text": "x", "level": 2}]), False, "unknown section key"),
    ("item", item(path=[""]), False, "empty breadcrumb entry"),
    ("item", item(links=[""]), False, "empty link"),
    ("item", item(links=["x" * 1025]), False, "link longer than an id may be"),
    ("item", item(labels=[1]), False, "numeric label"),
    ("item", item(updated="2026-10-28T09:00:00Z"), True, "UTC time"),
    ("item", item(updated="2026-10-28 09:00"), True, "time without seconds"),
    ("item", item(updated="2026-10-28T09:00:00.123+02:00"), True, "fraction and offset"),
    ("item", item(updated="2026-10-28T09:00:00+0200"), True, "offset without colon"),
    ("item", item(updated="28.10.2026"), False, "not ISO 8601"),
    ("item", item(updated="2026-10-28T09"), False, "hour without minutes"),
    ("item", item(updated=None), False, "null updated"),
    ("item", item(body="text"), False, "unknown key"),
]


@pytest.mark.parametrize(("definition", "message", "valid", "why"), ROWS, ids=[row[3] for row in ROWS])
def test_own_table_agrees_with_jsonschema(definition, message, valid, why):
    assert reference_valid(definition, message) is valid, f"the table is wrong about: {why}"
    errors = message_errors(definition, message)
    assert (errors == []) is valid, f"{why}: {errors}"


def test_shared_table_agrees_with_jsonschema():
    if not EXAMPLES_PATH.exists():
        pytest.skip(f"{EXAMPLES_PATH.relative_to(REPOSITORY)} is not written yet")
    rows = [
        row
        for row in json.loads(EXAMPLES_PATH.read_text("utf-8"))
        if row.get("schema", "connector-protocol") == "connector-protocol"  # the SDK is for connectors
    ]
    assert rows, "the shared table has no connector rows"
    disagreements = []
    for row in rows:
        sdk_valid = message_errors(row["definition"], row["message"]) == []
        if sdk_valid != reference_valid(row["definition"], row["message"]) or sdk_valid != row["valid"]:
            disagreements.append(row["why"])
    assert disagreements == []


def test_every_definition_is_checked():
    schema = json.loads(SCHEMA_PATH.read_text("utf-8"))
    assert sdk_schema.definitions() == sorted(schema["$defs"])
    assert {row[0] for row in ROWS} >= {"checkReply", "listEntry", "fetchRequest", "item"}


def test_the_package_ships_the_repository_schema():
    shipped = Path(sdk_schema.__file__).with_name(sdk_schema.SCHEMA_FILE)
    assert shipped.is_symlink(), "the SDK must link to schemas/, not keep a copy"
    assert shipped.resolve() == SCHEMA_PATH.resolve()
    assert sdk_schema.load_schema() == json.loads(SCHEMA_PATH.read_text("utf-8"))


def test_errors_say_where_and_what():
    errors = message_errors("item", item(sections=[{"heading": None}], weight=12))
    assert errors == [
        "sections/0: 'text' is a required property",
        "weight: 12 is more than the maximum of 10",
    ]
    assert message_errors("listEntry", {"id": "a"}) == ["the record: 'version' is a required property"]


def test_an_unknown_keyword_is_refused():
    assert sorted(sdk_schema._unknown_keywords({"type": "string", "format": "date-time"})) == ["format"]
    nested = {"$defs": {"x": {"properties": {"y": {"items": {"uniqueItems": True}}}}}}
    assert list(sdk_schema._unknown_keywords(nested)) == ["uniqueItems"]
    assert list(sdk_schema._unknown_keywords(json.loads(SCHEMA_PATH.read_text("utf-8")))) == []


def test_unknown_definition_is_a_key_error():
    with pytest.raises(KeyError, match="no definition 'items'"):
        message_errors("items", {})
