"""Whether a server is running on a data folder: ``passageway serve`` holds a lock in it.

``serve`` takes a shared ``flock`` on ``<data folder>/server.lock`` for as long as it runs
(several servers on one folder, as replicas, may share it); the operating system drops it when
the process ends, however it ends. A command that would write into the folder (``search
--local``) or change what the server should serve (``init --folder``) asks :func:`server_running`
first, which tries an exclusive lock without waiting: it fails exactly while a server holds one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import IO

LOCK_NAME = "server.lock"


def hold(data_dir: Path) -> IO[bytes]:
    """Take the running server's shared lock on ``data_dir``; keep the returned file open while
    the server runs (closing it, or the process ending, releases the lock)."""
    from passageway.kernel.data_folder import private_folder

    private_folder(data_dir)
    descriptor = os.open(data_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    handle = os.fdopen(descriptor, "r+b")
    fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
    return handle


def server_running(data_dir: Path) -> bool:
    """Whether a ``passageway serve`` holds ``data_dir`` now."""
    try:
        descriptor = os.open(data_dir / LOCK_NAME, os.O_RDONLY)
    except OSError:
        return False  # no lock file: no server ever ran here, or the folder is not there
    with os.fdopen(descriptor, "rb") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        with contextlib.suppress(OSError):
            fcntl.flock(handle, fcntl.LOCK_UN)
    return False
