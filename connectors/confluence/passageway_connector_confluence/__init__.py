"""A passageway connector for Confluence Data Center and Server: the pages of chosen spaces.

Run it as ``python -m passageway_connector_confluence <mode>``; the settings (``URL``, ``SPACES``,
``TOKEN``, ...) come from the environment. See README.md.
"""

from passageway_connector_confluence.connector import ConfluenceConnector
from passageway_connector_confluence.settings import SETTINGS, ConfluenceSettings, load_settings
from passageway_connector_confluence.storage import storage_sections

__all__ = ["SETTINGS", "ConfluenceConnector", "ConfluenceSettings", "load_settings", "storage_sections"]
