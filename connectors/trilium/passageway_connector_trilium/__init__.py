"""A passageway connector for Trilium Notes: every text and code note, read through ETAPI.

Run it as ``python -m passageway_connector_trilium <mode>``; the settings (``URL``, ``TOKEN``,
``WEB_URL``, ...) come from the environment. See README.md.
"""

from passageway_connector_trilium.connector import TriliumConnector
from passageway_connector_trilium.settings import SETTINGS, TriliumSettings, load_settings
from passageway_connector_trilium.tree import Tree

__all__ = ["SETTINGS", "Tree", "TriliumConnector", "TriliumSettings", "load_settings"]
