"""Reading a request's body without letting hostile input become a server error.

A body is the client's: whatever it holds (JSON nested a hundred thousand deep, bytes that are not
UTF-8, text that is not Unicode) must end as the client's 400, never as a 500 with a traceback in
the log. The helpers here raise :class:`BadBody` with a message the client can act on.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web


class BadBody(ValueError):
    """The body cannot be used; the message says why, for the client."""


async def json_body(request: web.Request) -> Any:
    """The body parsed as JSON.

    :raises BadBody: the body is not UTF-8 JSON, or is nested too deeply to parse.
    """
    return parse_json(await request.read())


def parse_json(body: bytes) -> Any:
    """``body`` (already read) parsed as JSON.

    :raises BadBody: it is not UTF-8 JSON, or is nested too deeply to parse.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise BadBody("the body is not UTF-8") from None
    try:
        return json.loads(text)
    except RecursionError:
        raise BadBody("the body is JSON nested too deeply") from None
    except ValueError as error:
        raise BadBody(f"the body is not JSON ({getattr(error, 'msg', error)})") from None


async def form_body(request: web.Request) -> dict[str, str]:
    """The text fields of a form body (``application/x-www-form-urlencoded`` or multipart).

    :raises BadBody: the body cannot be decoded as a form.
    """
    try:
        form = await request.post()
    except (UnicodeDecodeError, ValueError, AssertionError) as error:
        raise BadBody(f"the body is not a form ({type(error).__name__})") from None
    return {key: value for key, value in form.items() if isinstance(value, str)}
