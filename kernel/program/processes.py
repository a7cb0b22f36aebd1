"""Killing a child program with everything it started, and closing our ends of its pipes.

Both run in a session of their own (``start_new_session=True``), so one ``killpg`` reaches their
children. A child that started a session of its own (``setsid``) has left that group; on Linux it
is still found as a descendant through the parent ids in ``/proc``. A process whose parent already
exited (a daemon's double fork) belongs to init; it is found by the random value of
:data:`MARKER_VARIABLE` that each call puts in its environment (:func:`new_marker`), which every
process it starts inherits. Only a daemon that also empties its environment escapes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal

MARKER_VARIABLE = "PASSAGEWAY_CALL"
"""The environment variable that marks every process of one call (a random value per call)."""


def new_marker() -> str:
    """A fresh value for :data:`MARKER_VARIABLE`."""
    return secrets.token_hex(12)


def marked(marker: str) -> list[int]:
    """Every process of ours whose environment holds ``MARKER_VARIABLE=marker``."""
    needle = f"{MARKER_VARIABLE}={marker}".encode()
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for name in entries:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                if needle in handle.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            continue  # gone meanwhile, or another user's
    return found


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


def kill_tree(pid: int, marker: str | None = None) -> int:
    """SIGKILL every descendant of ``pid``, every process marked with ``marker``, then the process
    group ``pid`` leads; returns how many processes besides ``pid`` itself were found.

    Blocking (it reads ``/proc``): call it from a thread when an event loop is running.
    """
    found = set(descendants(pid)) | set(marked(marker) if marker else ())
    found.discard(pid)
    for child in found:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(child, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    return len(found)


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
