"""The connector contract check, for a connector's own tests.

::

    from passageway.protocol import Connector
    from passageway.testing.contract import check_connector

    def test_my_connector(tmp_path):
        check_connector(Connector("mine", [sys.executable, "my_connector.py"], env={...}))

:func:`check_connector` raises ``AssertionError`` with the report when a rule fails and returns
the report when all pass; :func:`run_contract` returns the report either way. The rules are
listed in :data:`RULES` and explained in ``docs/write-a-connector.md``.
"""

from passageway.kernel.contract import (
    RULES,
    Connector,
    ContractReport,
    RuleResult,
    check_connector,
    check_connector_async,
    run_contract,
)

__all__ = [
    "RULES",
    "Connector",
    "ContractReport",
    "RuleResult",
    "check_connector",
    "check_connector_async",
    "run_contract",
]
