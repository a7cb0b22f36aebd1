"""The test servers stop when a test session ends, also in an xdist worker (no ``atexit`` there)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent("""
    import os
    from passageway_store_postgres import testing
    try:
        uri = testing.server_uri()
    except RuntimeError as error:
        print("skip", error)
        raise SystemExit(0)
    server, folder = testing._servers[0]
    print(server.get_postmaster_info().process.pid, folder, testing.stop_servers(), flush=True)
    os._exit(0)  # as an xdist worker leaves: no atexit handler runs
""")


def test_stop_servers_stops_and_deletes_what_the_process_started():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300,
                          check=True)
    words = done.stdout.split()
    if words[:1] == ["skip"]:
        pytest.skip(done.stdout.strip())
    pid, folder, stopped = int(words[0]), Path(words[1]), int(words[2])
    assert stopped == 1
    assert not folder.exists()
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return
    status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    assert "zombie" in status, f"PostgreSQL {pid} still runs after stop_servers()"
