"""The PostgreSQL server of this test run (see :mod:`passageway_store_postgres.testing`)."""

from __future__ import annotations

import sys

import pytest
from passageway_store_postgres.testing import server_uri


@pytest.fixture
def dsn() -> str:
    """The test server's URI; the test is skipped, with the reason, where it cannot start."""
    try:
        return server_uri()
    except RuntimeError as error:
        pytest.skip(str(error))


@pytest.fixture
def quick_outage(monkeypatch: pytest.MonkeyPatch) -> float:
    """A connect timeout of 2 s instead of the shipped 10 s, for the tests that stop the database:
    what they check is what the store does once a connection fails, not how long the failure
    takes (each such test waited the full timeout at least once). Returns the shipped value."""
    from passageway_store_postgres import store

    shipped = store.CONNECT_TIMEOUT
    monkeypatch.setattr(store, "CONNECT_TIMEOUT", 2.0)
    return shipped


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Stop the PostgreSQL servers this process started: an xdist worker never runs ``atexit``."""
    testing = sys.modules.get("passageway_store_postgres.testing")
    if testing is not None:
        testing.stop_servers()
