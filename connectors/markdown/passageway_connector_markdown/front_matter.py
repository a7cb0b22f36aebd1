"""A note's front matter: the YAML block at its top, and the fields read from it.

Every value is read as text (PyYAML's ``BaseLoader``), so ``no`` stays ``no`` and a date stays the
string it was written as. A field that cannot be used is reported with ``warn`` and left out, never
an error: a note with odd metadata is still worth indexing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import cache
from typing import Any

import yaml
from passageway_sdk.schema import load_schema

MAX_WEIGHT = 2.0

_FRONT_MATTER_END = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)
# libyaml's loader when PyYAML was built with it: the pure Python one takes most of a call's time.
_YAML_LOADER = getattr(yaml, "CBaseLoader", yaml.BaseLoader)

Warn = Callable[[str], None]


def split_front_matter(relative: str, text: str, warn: Warn) -> tuple[dict[str, Any], str]:
    """``(front matter, body)`` of the note at ``relative``; ``{}`` when it has none or it does
    not parse (then reported with ``warn``)."""
    if not text.startswith("---\n"):
        return {}, text
    end = _FRONT_MATTER_END.search(text, 4)
    if end is None:
        return {}, text  # an opening rule without a closing one is a thematic break, not metadata
    block = text[4 : end.start()]
    body = text[end.end() :].lstrip("\n")
    try:
        # BaseLoader keeps every scalar as text: `no` stays "no", a date stays a string.
        loaded = yaml.load(block, Loader=_YAML_LOADER)  # noqa: S506 - BaseLoader builds no objects
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(error, "problem", None) or "it does not parse"
        warn(f"{relative}: the front matter is not valid YAML{where}: {problem}; indexed without it")
        return {}, body
    if loaded is None:
        return {}, body
    if not isinstance(loaded, dict):
        warn(f"{relative}: the front matter is not a set of keys; indexed without it")
        return {}, body
    return loaded, body


def text_value(front_matter: Mapping[str, Any], key: str) -> str | None:
    """The stripped text of ``key``, or None when it is missing, empty or not text."""
    value = front_matter.get(key)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def labels(front_matter: Mapping[str, Any]) -> list[str]:
    """``tags`` as labels: a list, or a comma-separated string; a leading ``#`` is dropped."""
    tags = front_matter.get("tags")
    if isinstance(tags, str):
        tags = tags.split(",")
    if not isinstance(tags, list):
        return []
    found = {tag.strip().lstrip("#"): None for tag in tags if isinstance(tag, str)}
    found.pop("", None)
    return list(found)


def updated(relative: str, front_matter: Mapping[str, Any], modified_at: float, warn: Warn) -> str:
    """``updated`` in a form the protocol accepts, else the file's modification time in UTC."""
    given = text_value(front_matter, "updated")
    if given is not None:
        normalised = iso_8601(given)
        if normalised is not None:
            return normalised
        warn(f"{relative}: updated {given!r} is not an ISO 8601 date; the file's time is used")
    return datetime.fromtimestamp(modified_at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def weight(relative: str, front_matter: Mapping[str, Any], warn: Warn) -> float | None:
    """``weight`` from 0 to :data:`MAX_WEIGHT`, or None when it is missing or out of range."""
    given = text_value(front_matter, "weight")
    if given is None:
        return None
    try:
        value = float(given)
    except ValueError:
        value = math.nan
    if not 0 <= value <= MAX_WEIGHT:
        warn(f"{relative}: weight {given!r} is not a number from 0 to {MAX_WEIGHT:g}; ignored")
        return None
    return value


@cache
def _updated_pattern() -> str:
    # The protocol schema is the one rule table; take its pattern rather than repeat it here.
    return str(load_schema()["$defs"]["item"]["properties"]["updated"]["pattern"])


def iso_8601(value: str) -> str | None:
    """``value`` as an ISO 8601 date or time the protocol accepts, or ``None``.

    A value already in the protocol's form is kept as written (``2026-10-28`` stays a date). Static
    site generators often write ``2026-10-28 09:00:00 +0200``; such a time is converted to UTC.
    """
    if re.search(_updated_pattern(), value):
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None  # the right shape but no such day, such as 2026-02-30
        return value
    try:
        moment = datetime.fromisoformat(re.sub(r"\s+(?=[+-][0-9]{2}:?[0-9]{2}$|Z$)", "", value))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
