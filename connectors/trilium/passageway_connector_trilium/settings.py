"""The Trilium connector's settings, read from its environment (the ``env`` table and secrets)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from passageway_sdk import SettingsError

SETTINGS = ("URL", "TOKEN", "WEB_URL", "TIMEOUT", "MAX_NOTE_BYTES")
"""Every setting this connector reads; the README's table must list each (a test checks it)."""

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_NOTE_BYTES = 1_048_576


@dataclass(frozen=True)
class TriliumSettings:
    url: str
    """The server as the connector reaches it, without a trailing slash; ``/etapi`` is added."""
    token: str = field(repr=False)
    web_url: str
    """The address links are made with (``WEB_URL``, else ``URL``), without a trailing slash."""
    timeout: float
    max_note_bytes: int

    @property
    def etapi(self) -> str:
        return self.url + "/etapi"

    def note_link(self, note_id: str) -> str:
        """The address that opens a note in Trilium's web interface."""
        return f"{self.web_url}/#root/{note_id}"


def _address(key: str, raw: str) -> str:
    url = raw.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingsError(
            f"{key} must be an http:// or https:// address such as http://trilium:8080, not {raw!r}"
        )
    if parts.username is not None or parts.password is not None:
        raise SettingsError(f"{key} must not contain a user name or password; the ETAPI token goes in TOKEN")
    if parts.query or parts.fragment:
        raise SettingsError(f"{key} must be the server's address without ?query or #fragment, not {raw!r}")
    return url


def _number(key: str, raw: str, default: float, low: float, high: float) -> float:
    if not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise SettingsError(f"{key} must be a number from {low:g} to {high:g}, not {raw!r}")
    return value


def load_settings(env: Mapping[str, str]) -> TriliumSettings:
    """The settings from ``env``; a missing or malformed one raises :class:`SettingsError`."""
    raw_url = env.get("URL", "")
    if not raw_url.strip():
        raise SettingsError("URL is required: the Trilium server's address, such as http://trilium:8080")
    url = _address("URL", raw_url)
    if url.endswith("/etapi"):
        url = url.removesuffix("/etapi")
    token = env.get("TOKEN", "").strip()
    if not token:
        raise SettingsError(
            "TOKEN is required: an ETAPI token (Trilium: Options › ETAPI), given as a secret such as "
            'secrets = { TOKEN = "env:TRILIUM_TOKEN" }'
        )
    raw_web = env.get("WEB_URL", "")
    web_url = _address("WEB_URL", raw_web) if raw_web.strip() else url
    timeout = _number("TIMEOUT", env.get("TIMEOUT", ""), DEFAULT_TIMEOUT, 1, 600)
    max_bytes = _number(
        "MAX_NOTE_BYTES", env.get("MAX_NOTE_BYTES", ""), DEFAULT_MAX_NOTE_BYTES, 1024, 4_194_304
    )
    if max_bytes != int(max_bytes):
        raise SettingsError(
            f"MAX_NOTE_BYTES must be a whole number of bytes, not {env.get('MAX_NOTE_BYTES')!r}"
        )
    return TriliumSettings(
        url=url, token=token, web_url=web_url, timeout=timeout, max_note_bytes=int(max_bytes)
    )
