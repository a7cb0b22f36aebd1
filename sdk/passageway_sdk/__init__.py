"""passageway-sdk: the plumbing of a passageway connector, so a connector is its source's logic.

    from passageway_sdk import Connector, SettingsError, SourceError

Subclass :class:`Connector`, implement ``versions()`` and ``fetch(ids)``, and call
``YourConnector.main()``. The protocol stays the contract; this package only saves typing.
"""

from .connector import PROTOCOL_VERSION, Connector, SettingsError, SourceError, parse_since
from .html import MarkdownWriter, cut_text, html_to_markdown
from .http import (
    AnswerTooLarge,
    CrossOriginRedirect,
    JsonTooDeep,
    RequestTimeout,
    deadline,
    load_json,
    opener,
    read_capped,
    retry_after_seconds,
)
from .markdown import first_h1, heading_id, split_markdown, strip_code
from .schema import message_errors

__all__ = [
    "PROTOCOL_VERSION",
    "AnswerTooLarge",
    "Connector",
    "CrossOriginRedirect",
    "JsonTooDeep",
    "MarkdownWriter",
    "RequestTimeout",
    "SettingsError",
    "SourceError",
    "cut_text",
    "deadline",
    "first_h1",
    "heading_id",
    "html_to_markdown",
    "load_json",
    "message_errors",
    "opener",
    "parse_since",
    "read_capped",
    "retry_after_seconds",
    "split_markdown",
    "strip_code",
]
