"""The Wikipedia connector's settings, read from its environment."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from passageway_sdk import SettingsError

# Boilerplate headings of English and German Wikipedia: lists of sources and links, not prose.
DEFAULT_SKIP_SECTIONS = (
    # English
    "References",
    "Notes",
    "Footnotes",
    "Citations",
    "Sources",
    "Notes and references",
    "References and notes",
    "Bibliography",
    "Works cited",
    "Further reading",
    "External links",
    "See also",
    # German
    "Einzelnachweise",
    "Anmerkungen",
    "Fußnoten",
    "Belege",
    "Quellen",
    "Referenzen",
    "Literatur",
    "Weblinks",
    "Siehe auch",
)

_LANGUAGE = re.compile(r"^[a-z][a-z0-9-]{0,19}$")


@dataclass(frozen=True)
class Geo:
    latitude: float
    longitude: float
    radius: int


@dataclass(frozen=True)
class WikipediaSettings:
    language: str
    categories: tuple[str, ...]
    category_depth: int
    titles: tuple[str, ...]
    geo: Geo | None
    max_pages: int
    skip_sections: frozenset[str]
    api_url: str
    page_url: str
    contact: str
    pause_seconds: float

    def page_link(self, title: str) -> str:
        """The reader's address of a page: ``PAGE_URL`` with the title, spaces as underscores."""
        from urllib.parse import quote

        path = quote(title.replace(" ", "_"), safe="/:()_,-.'!*~")
        if "$1" in self.page_url:
            return self.page_url.replace("$1", path)
        return self.page_url + path


def _split(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split("|") if part.strip())


def _whole_number(env: Mapping[str, str], key: str, default: int, minimum: int) -> int:
    raw = env.get(key, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise SettingsError(f"{key} must be a whole number of at least {minimum}, not {raw!r}")
    return value


def _http_url(env: Mapping[str, str], key: str, default: str) -> str:
    url = env.get(key, "").strip() or default
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingsError(f"{key} must be an http:// or https:// address, not {url!r}")
    if parts.username is not None or parts.password is not None:
        raise SettingsError(f"{key} must not contain a user name or password")
    return url


def category_title(name: str) -> str:
    """``Deep learning`` becomes ``Category:Deep learning``; a name with a prefix stays as given."""
    if ":" in name.strip(":"):
        return name.strip()
    return "Category:" + name.strip(":").strip()


def _geo(raw: str) -> Geo:
    parts = [part.strip() for part in raw.split(",")]
    message = f"GEO must be latitude,longitude,radius in metres such as 48.1372,11.5756,5000, not {raw!r}"
    if len(parts) != 3:
        raise SettingsError(message)
    try:
        latitude, longitude, radius = float(parts[0]), float(parts[1]), float(parts[2])
    except ValueError:
        raise SettingsError(message) from None
    if not (-90 <= latitude <= 90 and -180 <= longitude <= 180):
        raise SettingsError(
            f"GEO's latitude must be from -90 to 90 and its longitude from -180 to 180 ({raw!r})"
        )
    if not (math.isfinite(radius) and 10 <= radius <= 10000):
        raise SettingsError(
            f"GEO's radius must be from 10 to 10000 metres (MediaWiki's limit), not {parts[2]!r}; "
            "for a larger region use CATEGORIES"
        )
    return Geo(latitude, longitude, int(radius))


def load_settings(env: Mapping[str, str]) -> WikipediaSettings:
    language = env.get("LANGUAGE", "").strip().lower() or "en"
    if not _LANGUAGE.match(language):
        raise SettingsError(f"LANGUAGE must be a Wikipedia language code such as en or de, not {language!r}")
    categories = tuple(category_title(name) for name in _split(env.get("CATEGORIES", "")))
    titles = _split(env.get("TITLES", ""))
    raw_geo = env.get("GEO", "").strip()
    geo = _geo(raw_geo) if raw_geo else None
    if not (categories or titles or geo):
        raise SettingsError(
            "set at least one of CATEGORIES (a topic), TITLES (some articles) or GEO (a place)"
        )
    raw_skip = env.get("SKIP_SECTIONS")
    if raw_skip is None or not raw_skip.strip():
        skip = DEFAULT_SKIP_SECTIONS
    elif raw_skip.strip().lower() == "none":
        skip = ()
    else:
        skip = _split(raw_skip)
    raw_pause = env.get("PAUSE_SECONDS", "").strip()
    pause = 0.1
    if raw_pause:
        try:
            pause = float(raw_pause)
        except ValueError:
            pause = -1.0
        if not (math.isfinite(pause) and 0 <= pause <= 60):
            raise SettingsError(f"PAUSE_SECONDS must be a number of seconds from 0 to 60, not {raw_pause!r}")
    return WikipediaSettings(
        language=language,
        categories=categories,
        category_depth=_whole_number(env, "CATEGORY_DEPTH", 1, 0),
        titles=titles,
        geo=geo,
        max_pages=_whole_number(env, "MAX_PAGES", 500, 1),
        skip_sections=frozenset(heading.casefold() for heading in skip),
        api_url=_http_url(env, "API_URL", f"https://{language}.wikipedia.org/w/api.php"),
        page_url=_http_url(env, "PAGE_URL", f"https://{language}.wikipedia.org/wiki/"),
        contact=env.get("CONTACT", "").strip(),
        pause_seconds=pause,
    )
