"""The OAuth server's replies: two HTML pages (a message, the login form that allows a client),
and the JSON error every OAuth route answers a client's mistake with.

One page each, inline CSS, no script; the headers forbid framing, other origins and caching.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from passageway.builtin.transport.redirect_address import browser_host

PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
}
STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:26rem;margin:4rem auto;padding:0 1rem}"
    "input{font:inherit;padding:.4rem;width:100%;box-sizing:border-box;margin:.4rem 0}"
    "button{font:inherit;padding:.4rem 1rem}.error{color:#b00020}"
)
FORWARDED = ("response_type", "client_id", "redirect_uri", "code_challenge", "code_challenge_method",
             "state", "scope", "resource")


def page(title: str, text: str, status: int = 200) -> web.Response:
    body = (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>"
            f"<p>{html.escape(text)}</p></body></html>")
    return web.Response(text=body, content_type="text/html", status=status, headers=PAGE_HEADERS)


def login_page(client: Mapping[str, Any], params: Mapping[str, str], error: str | None = None,
                status: int = 200) -> web.Response:
    name = html.escape(_text(str(client.get("client_name") or "An application")))
    # The name is the client's own choice; the address it returns to is not, so show that too,
    # as the browser will read it.
    returning = params.get("redirect_uri", "")
    destination = html.escape(_text(browser_host(returning) or returning.partition(":")[0] + ":"))
    hidden = "".join(
        f"<input type='hidden' name='{key}' value='{html.escape(_text(params[key]), quote=True)}'>"
        for key in FORWARDED if params.get(key)
    )
    message = f"<p class='error'>{html.escape(error)}</p>" if error else ""
    body = (
        "<!doctype html><html><head><meta charset='utf-8'><title>passageway login</title>"
        f"<style>{STYLE}</style></head><body><h1>passageway</h1>"
        f"<p>{name} asks to search your sources through passageway. Enter the server's password "
        "to allow it.</p>"
        f"<p>After you allow it, your browser returns to <strong>{destination}</strong>. "
        "If you do not recognise that address, do not enter the password.</p>"
        f"{message}<form method='post' action='authorize'>{hidden}"
        "<input type='password' name='password' autocomplete='current-password' autofocus required "
        "aria-label='Password'><button type='submit'>Allow</button></form></body></html>"
    )
    return web.Response(text=body, content_type="text/html", status=status, headers=PAGE_HEADERS)


def _text(value: str) -> str:
    """``value`` with anything that is not Unicode (lone surrogates) replaced, so the page encodes."""
    return value.encode("utf-8", "replace").decode("utf-8")


def oauth_error(error: str, description: str, status: int = 400) -> web.Response:
    """An OAuth error reply (RFC 6749 5.2): the code a client acts on and a sentence for a person."""
    return web.json_response({"error": error, "error_description": description}, status=status,
                             headers={"Cache-Control": "no-store"})
