"""Text that is not Unicode: lone surrogates, which JSON can carry and UTF-8 cannot.

JSON lets a string hold ``"\\ud800"``, half of a UTF-16 pair, and Python decodes it into a ``str``
that cannot be encoded as UTF-8: storing, hashing or embedding it raises. Such text comes only
from outside (a connector's line, a client's request), so it is found where it comes in:

* a connector's record is repaired (each lone surrogate becomes U+FFFD) and kept, its
  ``version`` too (``list`` and ``fetch`` repair it alike, so the two still match), or, when its
  ``id`` holds one, left out alone and reported (:func:`repair_record`);
* a client's prompt is the client's 400 (:func:`is_unicode`), and a question is repaired.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""A surrogate code point in a ``str``: one that stood alone (``json`` joins a proper pair)."""
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
"""A JSON escape of a surrogate in a raw line: the only way a lone one gets into decoded text."""
REPLACEMENT = "\ufffd"
SHOWN_CHARS = 120


def is_unicode(text: str) -> bool:
    """Whether ``text`` can be encoded as UTF-8 (holds no lone surrogate)."""
    return LONE_SURROGATE.search(text) is None


def repaired(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD."""
    return LONE_SURROGATE.sub(REPLACEMENT, text)


def repair_record(value: dict[str, Any], identity_keys: Sequence[str] = ("id",)
                  ) -> tuple[dict[str, Any] | None, str | None]:
    """A connector record with its lone surrogates replaced, and a note for the log (None if clean).

    The protocol says UTF-8, so such text is the connector's mistake; it is repaired rather than
    refused so that one bad item costs nothing: its text keeps every other character. A value of
    ``identity_keys`` cannot be repaired without becoming another id, so such a record is left
    out alone: the record returned is None.
    """
    for key in identity_keys:
        entry = value.get(key)
        if isinstance(entry, str) and not is_unicode(entry):
            return None, (f"the {key} {repaired(entry)[:SHOWN_CHARS]!r} holds a lone surrogate escape "
                          "(such as \\ud800), which is not UTF-8 text; the record was left out and the "
                          "rest of the call kept. Fix the connector: `passageway check-connector` "
                          "shows the line")
    count = 0

    def fix(node: Any) -> Any:
        nonlocal count
        if isinstance(node, str):
            fixed, found = LONE_SURROGATE.subn(REPLACEMENT, node)
            count += found
            return fixed
        if isinstance(node, list):
            return [fix(entry) for entry in node]
        if isinstance(node, dict):
            return {fix(key): fix(entry) for key, entry in node.items()}
        return node

    fixed = fix(value)
    if not count:
        return value, None
    return fixed, (f"{count} lone surrogate escape(s) (such as \\ud800) in item {fixed.get('id')!r} "
                   "are not UTF-8 text; each was replaced with U+FFFD and the item kept. Fix the "
                   "connector: `passageway check-connector` shows the line")
