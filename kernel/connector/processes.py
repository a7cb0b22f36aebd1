"""Killing a child program with everything it started, and closing our ends of its pipes.

Both run in a session of their own (``start_new_session=True``), so one ``killpg`` reaches their
children. A child that started a session of its own (``setsid``) has left that group; on Linux it
is still found as a descendant through the parent ids in ``/proc``. A process whose parent already
exited (a daemon's double fork) belongs to init and cannot be told apart from any other: it
survives.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal


def descendants(pid: int) -> list[int]:
    """Every living process below ``pid``; an empty list where there is no ``/proc``."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        children.setdefault(int(fields[1]), []).append(int(name))
    found, waiting = [], list(children.get(pid, ()))
    while waiting:
        child = waiting.pop()
        found.append(child)
        waiting.extend(children.get(child, ()))
    return found


def kill_tree(pid: int) -> None:
    """SIGKILL every descendant of ``pid``, then the process group ``pid`` leads.

    Blocking (it reads ``/proc``): call it from a thread when an event loop is running.
    """
    for child in descendants(pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(child, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def close_pipes(process: asyncio.subprocess.Process) -> None:
    """Close our ends of an ended program's pipes: its asyncio transport.

    asyncio closes the transport by itself only once it has seen the program's output pipes
    close, which can come after the caller is done (or never, while a process that escaped
    :func:`kill_tree` holds them). A transport left open is closed when garbage-collected, and
    if its event loop has closed by then, that fails with "Event loop is closed".
    """
    transport = getattr(process, "_transport", None)  # asyncio offers no public handle on it
    if transport is not None and not transport.is_closing():
        transport.close()
