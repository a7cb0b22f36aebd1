"""The Confluence connector's settings, read from its environment (the ``env`` table and secrets)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from passageway_sdk import SettingsError

SETTINGS = (
    "URL",
    "SPACES",
    "TOKEN",
    "INCLUDE_LABELS",
    "EXCLUDE_LABELS",
    "MAX_PAGES",
    "TIMEOUT",
    "PAUSE_SECONDS",
    "VERIFY_TLS",
)
"""Every setting this connector reads; the README's table must list each (a test checks it)."""

_SPACE_KEY = re.compile(r"^~?[A-Za-z0-9_]{1,255}$")


@dataclass(frozen=True)
class ConfluenceSettings:
    url: str
    """The site with its context path, without a trailing slash; ``/rest/api`` is added."""
    spaces: tuple[str, ...]
    token: str = field(repr=False)
    include_labels: frozenset[str]
    exclude_labels: frozenset[str]
    max_pages: int
    timeout: float
    pause_seconds: float
    verify_tls: bool

    def page_link(self, page_id: str) -> str:
        """The address that opens a page, stable across renames and moves."""
        return f"{self.url}/pages/viewpage.action?pageId={page_id}"


def _split(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split("|") if part.strip())


def _number(key: str, raw: str, default: float, low: float, high: float) -> float:
    if not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and low <= value <= high):
        raise SettingsError(f"{key} must be a number from {low:g} to {high:g}, not {raw!r}")
    return value


def load_settings(env: Mapping[str, str]) -> ConfluenceSettings:
    """The settings from ``env``; a missing or malformed one raises :class:`SettingsError`."""
    raw_url = env.get("URL", "").strip()
    if not raw_url:
        raise SettingsError("URL is required: the Confluence site, such as https://wiki.example.org")
    url = raw_url.rstrip("/").removesuffix("/rest/api")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingsError(
            f"URL must be an http:// or https:// address such as https://wiki.example.org, not {raw_url!r}"
        )
    if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
        raise SettingsError(
            "URL must be the site's address only, without user name, password, ?query or #fragment"
        )
    spaces = _split(env.get("SPACES", ""))
    if not spaces:
        raise SettingsError("SPACES is required: the space keys to index, separated by |, such as OPS|HR")
    wrong = [key for key in spaces if not _SPACE_KEY.match(key)]
    if wrong:
        raise SettingsError(
            f"SPACES holds {wrong[0]!r}, which is not a space key (letters and digits, such as OPS)"
        )
    token = env.get("TOKEN", "").strip()
    if not token:
        raise SettingsError(
            "TOKEN is required: a personal access token (Confluence: Profile › Personal Access Tokens), "
            'given as a secret such as secrets = { TOKEN = "env:CONFLUENCE_TOKEN" }'
        )
    max_pages = _number("MAX_PAGES", env.get("MAX_PAGES", ""), 5000, 1, 1_000_000)
    if max_pages != int(max_pages):
        raise SettingsError(f"MAX_PAGES must be a whole number, not {env.get('MAX_PAGES')!r}")
    verify = env.get("VERIFY_TLS", "").strip().lower() or "true"
    if verify not in ("true", "false"):
        raise SettingsError(f"VERIFY_TLS must be true or false, not {env.get('VERIFY_TLS')!r}")
    return ConfluenceSettings(
        url=url,
        spaces=tuple(dict.fromkeys(spaces)),
        token=token,
        include_labels=frozenset(label.lower() for label in _split(env.get("INCLUDE_LABELS", ""))),
        exclude_labels=frozenset(label.lower() for label in _split(env.get("EXCLUDE_LABELS", ""))),
        max_pages=int(max_pages),
        timeout=_number("TIMEOUT", env.get("TIMEOUT", ""), 30, 1, 600),
        pause_seconds=_number("PAUSE_SECONDS", env.get("PAUSE_SECONDS", ""), 0, 0, 60),
        verify_tls=verify == "true",
    )
