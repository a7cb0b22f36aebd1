"""The connector protocol, version 1, for code outside the kernel.

``Connector`` names a connector program and its settings; hand it to
:func:`passageway.testing.contract.check_connector` in a test, or call
``Connector(...).runner()`` to run its modes as the server does. The records a connector's
lines become, the schema validation and the errors are re-exported here so that nobody has to
reach into ``passageway.kernel``. The protocol is described in ``docs/connector-protocol.md`` and
``schemas/connector-protocol.schema.json``.
"""

from passageway.kernel.connector import DEFINITIONS, MAX_FETCH_IDS, MODES, ConnectorRunner
from passageway.kernel.contract import Connector
from passageway.kernel.errors import ConnectorError
from passageway.kernel.records import (
    PROTOCOL_VERSION,
    CheckReply,
    Item,
    ListEntry,
    Section,
    item_from_json,
    item_to_json,
    validate_connector_message,
)

__all__ = [
    "DEFINITIONS",
    "MAX_FETCH_IDS",
    "MODES",
    "PROTOCOL_VERSION",
    "CheckReply",
    "Connector",
    "ConnectorError",
    "ConnectorRunner",
    "Item",
    "ListEntry",
    "Section",
    "item_from_json",
    "item_to_json",
    "validate_connector_message",
]
