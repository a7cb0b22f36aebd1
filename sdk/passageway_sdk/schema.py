"""The connector protocol's rule table, checked without dependencies.

The rules a message must follow live in one place: ``connector-protocol.schema.json``, the JSON
Schema the core validates with as well (this package ships it through a symbolic link to the
repository's ``schemas/`` folder). This module is a small validator for exactly the JSON Schema
keywords that file uses, so the SDK needs no ``jsonschema`` and still applies the same rules.

A schema that starts to use a keyword this module does not know makes :func:`load_schema` fail,
rather than letting the SDK silently check less than the core.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

SCHEMA_FILE = "connector-protocol.schema.json"

# Keywords that only describe or identify; they never reject a value.
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "title", "description", "examples", "default"})
# Keywords this validator enforces.
_ASSERTIONS = frozenset(
    {
        "type", "required", "properties", "additionalProperties", "const", "enum",
        "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "minItems", "maxItems", "items", "pattern", "$ref", "oneOf", "anyOf", "allOf", "$defs",
    }
)  # fmt: skip


PATTERN_HINTS = {
    "anchor": "is not a heading id: give the id without '#', with no spaces (letters, digits, "
              "- _ . : ~ and escapes such as %20), or leave anchor out",
    "updated": "is not an ISO 8601 date or time such as 2026-10-28 or 2026-10-28T09:00:00Z",
}
"""What a value that breaks a field's ``pattern`` is, and what to send instead, by field name (the
core words it the same way): the regular expression itself tells a connector author little."""


class SchemaKeywordError(RuntimeError):
    """The schema uses a keyword this validator does not implement."""


@cache
def load_schema() -> dict[str, Any]:
    """The connector protocol schema shipped inside this package, after checking its keywords."""
    # A plain file next to this module (not importlib.resources, whose imports cost a connector
    # about 20 ms on every call).
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), SCHEMA_FILE)
    with open(path, encoding="utf-8") as handle:
        schema = json.load(handle)
    unknown = sorted(_unknown_keywords(schema))
    if unknown:
        raise SchemaKeywordError(
            f"{SCHEMA_FILE} uses JSON Schema keywords the SDK's validator does not implement: "
            f"{', '.join(unknown)}; add them to passageway_sdk/schema.py"
        )
    return schema


def definitions() -> list[str]:
    """The names under ``$defs`` (``checkReply``, ``listEntry``, ``fetchRequest``, ``item``, ...)."""
    return sorted(load_schema()["$defs"])


def message_errors(definition: str, value: Any) -> list[str]:
    """Every way ``value`` breaks ``$defs/<definition>``, as short ``where: what`` lines.

    An empty list means the value is valid. ``where`` is the slash-separated path to the
    offending part (``sections/0/text``) or ``the record`` for the value itself, as in the core.
    """
    schema = load_schema()
    if definition not in schema["$defs"]:
        raise KeyError(f"the connector protocol schema has no definition {definition!r}")
    errors = list(_errors(schema["$defs"][definition], value, (), schema))
    errors.sort(key=lambda error: [str(part) for part in error[0]])
    return [f"{'/'.join(str(part) for part in path) or 'the record'}: {message}" for path, message in errors]


# ---------------------------------------------------------------------------------------------
# The validator
# ---------------------------------------------------------------------------------------------

_Path = tuple[str | int, ...]


def _unknown_keywords(schema: Any) -> Iterator[str]:
    if not isinstance(schema, Mapping):
        return
    for keyword, value in schema.items():
        if keyword in _ANNOTATIONS:
            continue
        if keyword not in _ASSERTIONS:
            yield keyword
            continue
        if keyword in ("properties", "$defs"):
            for sub in value.values():
                yield from _unknown_keywords(sub)
        elif keyword in ("items", "additionalProperties"):
            yield from _unknown_keywords(value)
        elif keyword in ("oneOf", "anyOf", "allOf"):
            for sub in value:
                yield from _unknown_keywords(sub)


def _resolve(reference: str, root: Mapping[str, Any]) -> Any:
    if not reference.startswith("#/"):
        raise SchemaKeywordError(f"only local references (#/...) are supported, not {reference!r}")
    node: Any = root
    for part in reference[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def _is_type(value: Any, name: str) -> bool:
    # JSON has no separate boolean-as-number; Python's bool is an int, so exclude it by hand.
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if name == "string":
        return isinstance(value, str)
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if name == "integer":
        if isinstance(value, bool):
            return False
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    raise SchemaKeywordError(f"unknown JSON Schema type {name!r}")


def _json_equal(left: Any, right: Any) -> bool:
    """Equality as JSON means it: ``true`` is not ``1``, ``1`` is ``1.0``."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(_json_equal(a, b) for a, b in zip(left, right, strict=True))
    if _is_type(left, "number") and _is_type(right, "number"):
        return left == right
    return type(left) is type(right) and left == right


def _describe(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 60 else text[:57] + "..."


def _errors(schema: Any, value: Any, path: _Path, root: Mapping[str, Any]) -> Iterator[tuple[_Path, str]]:
    if schema is True:
        return
    if schema is False:
        yield path, f"{_describe(value)} is not allowed here"
        return

    if "$ref" in schema:
        yield from _errors(_resolve(schema["$ref"], root), value, path, root)

    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is_type(value, name) for name in names):
            yield path, f"{_describe(value)} is not of type {' or '.join(names)}"
            return  # the other keywords would only repeat the same mistake

    if "const" in schema and not _json_equal(value, schema["const"]):
        yield path, f"{_describe(schema['const'])} was expected, not {_describe(value)}"
    if "enum" in schema and not any(_json_equal(value, option) for option in schema["enum"]):
        yield path, f"{_describe(value)} is not one of {_describe(schema['enum'])}"

    if isinstance(value, str):
        yield from _string_errors(schema, value, path)
    if _is_type(value, "number"):
        yield from _number_errors(schema, value, path)
    if isinstance(value, list):
        yield from _array_errors(schema, value, path, root)
    if isinstance(value, dict):
        yield from _object_errors(schema, value, path, root)
    yield from _combined_errors(schema, value, path, root)


def _string_errors(schema: Mapping[str, Any], value: str, path: _Path) -> Iterator[tuple[_Path, str]]:
    if "minLength" in schema and len(value) < schema["minLength"]:
        yield path, f"{_describe(value)} is shorter than {schema['minLength']} characters"
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        yield path, f"{_describe(value)} is longer than {schema['maxLength']} characters"
    if "pattern" in schema and not re.search(schema["pattern"], value):
        hint = PATTERN_HINTS.get(str(path[-1])) if path else None
        yield path, f"{_describe(value)} {hint or 'does not match ' + repr(schema['pattern'])}"


def _number_errors(schema: Mapping[str, Any], value: float, path: _Path) -> Iterator[tuple[_Path, str]]:
    if isinstance(value, float) and not math.isfinite(value):
        yield path, f"{value!r} is not a JSON number"
    if "minimum" in schema and value < schema["minimum"]:
        yield path, f"{value!r} is less than the minimum of {schema['minimum']}"
    if "maximum" in schema and value > schema["maximum"]:
        yield path, f"{value!r} is more than the maximum of {schema['maximum']}"
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        yield path, f"{value!r} is not more than {schema['exclusiveMinimum']}"
    if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
        yield path, f"{value!r} is not less than {schema['exclusiveMaximum']}"


def _array_errors(
    schema: Mapping[str, Any], value: list[Any], path: _Path, root: Mapping[str, Any]
) -> Iterator[tuple[_Path, str]]:
    if "minItems" in schema and len(value) < schema["minItems"]:
        yield path, f"has {len(value)} entries, fewer than {schema['minItems']}"
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        yield path, f"has {len(value)} entries, more than {schema['maxItems']}"
    if "items" in schema:
        for index, entry in enumerate(value):
            yield from _errors(schema["items"], entry, (*path, index), root)


def _object_errors(
    schema: Mapping[str, Any], value: dict[str, Any], path: _Path, root: Mapping[str, Any]
) -> Iterator[tuple[_Path, str]]:
    for key in schema.get("required", ()):
        if key not in value:
            yield path, f"{key!r} is a required property"
    properties = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key, entry in value.items():
        if key in properties:
            yield from _errors(properties[key], entry, (*path, key), root)
        elif extra is False:
            yield path, f"{key!r} is not an allowed property"
        elif extra is not True:
            yield from _errors(extra, entry, (*path, key), root)


def _combined_errors(
    schema: Mapping[str, Any], value: Any, path: _Path, root: Mapping[str, Any]
) -> Iterator[tuple[_Path, str]]:
    """``allOf``, ``anyOf`` and ``oneOf``."""
    for sub in schema.get("allOf", ()):
        yield from _errors(sub, value, path, root)
    if "anyOf" in schema and not any(
        not any(True for _ in _errors(sub, value, path, root)) for sub in schema["anyOf"]
    ):
        yield path, f"{_describe(value)} matches none of the allowed forms"
    if "oneOf" in schema:
        matches = sum(1 for sub in schema["oneOf"] if not any(True for _ in _errors(sub, value, path, root)))
        if matches != 1:
            what = "none" if matches == 0 else f"{matches}"
            yield path, f"{_describe(value)} matches {what} of the allowed forms, exactly one is needed"
