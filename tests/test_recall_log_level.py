"""A server's log at INFO is not a line per question: recall's count and time are DEBUG."""

from __future__ import annotations

import logging

from passageway.kernel.app import Kernel
from passageway.kernel.config import load_settings
from tests.server_helpers import make_kernel, write_instance


async def test_a_recall_adds_no_info_line(tmp_path, caplog):
    environ = write_instance(tmp_path)
    async with Kernel.open(load_settings(environ), make_kernel(environ).manager, environ) as kernel:
        await kernel.sync_once()
        caplog.clear()  # what the start logged (at INFO when an earlier test set the level) is not asked
        with caplog.at_level(logging.DEBUG, logger="passageway.kernel"):
            await kernel.recall("how does a refracting telescope gather starlight?")
        records = [record for record in caplog.records if record.name == "passageway.kernel"]
        assert [record.levelno for record in records] == [logging.DEBUG]
