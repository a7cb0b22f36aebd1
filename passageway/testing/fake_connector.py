"""A connector serving the item records of the JSON file ``FAKE_ITEMS``.

Run it as ``python -m passageway.testing.fake_connector <mode>``; its settings (``FAKE_ITEMS``,
``FAKE_FAIL``, ``FAKE_SLEEP``) are described in :mod:`passageway.kernel.fake_connector` and in
``docs/connector-protocol.md``.
"""

import sys

from passageway.kernel.fake_connector import main, run

__all__ = ["main", "run"]

if __name__ == "__main__":
    sys.exit(main())
