"""Which host a browser goes to for an OAuth redirect address, read the way browsers read it.

Python's ``urlsplit`` and a browser disagree on addresses such as ``http://evil.example\\@127.0.0.1/cb``:
``urlsplit`` finds the host ``127.0.0.1``, while a browser (the WHATWG URL standard) treats ``\\`` as
``/`` in ``http`` and ``https`` addresses, so the authority ends before the ``\\`` and the browser goes
to ``evil.example`` with the code. What a redirect address may be is therefore decided on the
browser's reading (:func:`browser_host`), and anything the two readings could disagree on is
refused outright (:func:`redirect_problem`): a backslash, user information, characters outside
printable ASCII, a host written in any form but its plain one.
"""

from __future__ import annotations

from urllib.parse import urlsplit

MAX_REDIRECT_CHARS = 1024
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]"})
SPECIAL_SCHEMES = frozenset({"http", "https", "ws", "wss", "ftp"})
FORBIDDEN_SCHEMES = frozenset({"javascript", "data", "file", "vbscript", "blob", "about"})
HOST_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789.-")


def browser_host(address: str) -> str | None:
    """The host a browser goes to for ``address`` (lower case, IPv6 in brackets), or None.

    Only the parts of the WHATWG URL parser that decide the host are followed: leading and
    trailing spaces and control characters are dropped, tabs and newlines vanish anywhere, the
    scheme is case-insensitive, in special schemes ``\\`` counts as ``/`` and any number of slashes
    may follow the colon, the authority ends at the first ``/``, ``\\``, ``?`` or ``#``, and the user
    information ends at its last ``@``. None for an address without a host (``com.example.app:/cb``).
    """
    text = address.strip("".join(chr(code) for code in range(0x21)))
    text = text.replace("\t", "").replace("\n", "").replace("\r", "")
    scheme, colon, rest = text.partition(":")
    if not colon or not scheme or not scheme[0].isalpha():
        return None
    scheme = scheme.lower()
    special = scheme in SPECIAL_SCHEMES
    if special:
        rest = rest.replace("\\", "/")
        rest = rest.lstrip("/")
    elif rest.startswith("//"):
        rest = rest[2:]
    else:
        return None
    end = min((index for index in (rest.find(mark) for mark in "/?#") if index >= 0), default=len(rest))
    authority = rest[:end].rpartition("@")[2]
    if authority.startswith("["):
        return authority[:authority.find("]") + 1].lower() if "]" in authority else None
    return authority.partition(":")[0].lower() or None


def redirect_problem(address: str) -> str | None:
    """Why ``address`` cannot be a redirect address, in a few words, or None when it can.

    Allowed: ``https`` with a host, ``http`` on the loopback host exactly (``127.0.0.1``,
    ``localhost``, ``[::1]``) and a native application's private scheme (RFC 8252), such as
    ``com.example.app:/callback``. Both the browser's reading and Python's must name the same host.
    """
    if len(address) > MAX_REDIRECT_CHARS:
        return f"longer than {MAX_REDIRECT_CHARS} characters"
    if not address.isascii() or not address.isprintable() or " " in address:
        return "characters outside printable ASCII (percent-encode them)"
    if "\\" in address:
        return "a backslash"
    try:
        parts = urlsplit(address)
        python_host, _ = parts.hostname, parts.port
    except ValueError:
        return "not an address"
    scheme = parts.scheme.lower()
    if not scheme or parts.fragment or "#" in address:
        return "no scheme, or a fragment"
    if scheme in FORBIDDEN_SCHEMES:
        return f"the scheme {scheme}:"
    if scheme not in ("http", "https"):
        # A private scheme has a dot (RFC 8252); one with an authority would need the same care.
        return None if "." in scheme and not parts.netloc else "a scheme that is neither https nor app.name"
    if "@" in parts.netloc:
        return "user information (name@host)"
    host = browser_host(address)
    shown = f"[{python_host}]" if python_host and ":" in python_host else python_host
    if not host or host != shown or not _plain_host(host):
        return "a host written in an unusual form"
    if scheme == "http" and host not in LOOPBACK_HOSTS:
        return "http on a host other than 127.0.0.1, localhost or [::1]"
    return None


def _plain_host(host: str) -> bool:
    """A name or dotted address in its plain form, or ``[::1]`` (no percent signs, no tricks)."""
    if host == "[::1]":
        return True
    if not set(host) <= HOST_CHARACTERS or host.startswith(("-", ".")) or host.endswith(".") or ".." in host:
        return False
    last = host.rpartition(".")[2]
    if last.isdigit() or last.startswith("0x"):
        # A browser reads a host ending in a number as an IPv4 address, in any of its forms
        # (2130706433, 0x7f.1, 0177.0.0.1): only the four plain decimal parts are allowed.
        parts = host.split(".")
        return len(parts) == 4 and all(
            part.isdigit() and int(part) < 256 and (part == "0" or not part.startswith("0")) for part in parts
        )
    return True
