"""A connector serving the item records of the JSON file ``FAKE_ITEMS``.

Run it as ``python -m passageway.testing.fake_connector <mode>``; its settings (``FAKE_ITEMS``,
``FAKE_FAIL``, ``FAKE_SLEEP``) are described in :mod:`passageway.kernel.fake_connector` and in
``docs/connector-protocol.md``.

In tests, :func:`command` is the faster way to name it: it runs the module's file directly, which
needs only the standard library, and skips importing the ``passageway`` package at every call.
"""

import sys

from passageway.kernel import fake_connector as _implementation
from passageway.kernel.fake_connector import main, run

__all__ = ["command", "main", "run"]


def command() -> list[str]:
    """The ``command`` of a ``[[connector]]`` (or a ``Connector``) that runs the fake connector."""
    return [sys.executable, _implementation.__file__]


if __name__ == "__main__":
    sys.exit(main())
