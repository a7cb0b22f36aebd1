"""A passageway connector for a folder of markdown notes.

Run it as ``python -m passageway_connector_markdown <mode>``.
"""

from passageway_connector_markdown.connector import MarkdownConnector

__all__ = ["MarkdownConnector"]
