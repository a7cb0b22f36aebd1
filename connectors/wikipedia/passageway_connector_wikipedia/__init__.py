"""A passageway connector for Wikipedia and any other MediaWiki site.

Run it as ``python -m passageway_connector_wikipedia <mode>``; the settings (``LANGUAGE``,
``CATEGORIES``, ``TITLES``, ``GEO``, ...) come from the environment. See README.md.
"""

from passageway_connector_wikipedia.api import ApiError, MediaWikiClient
from passageway_connector_wikipedia.connector import WikipediaConnector
from passageway_connector_wikipedia.settings import WikipediaSettings, load_settings
from passageway_connector_wikipedia.text import html_sections

__all__ = [
    "ApiError",
    "MediaWikiClient",
    "WikipediaConnector",
    "WikipediaSettings",
    "html_sections",
    "load_settings",
]
