"""A passageway connector for the passage index of a built documentation site.

Run it as ``python -m passageway_connector_site <mode>``.
"""

from passageway_connector_site.connector import SiteConnector

__all__ = ["SiteConnector"]
