"""The data folder is private: the folder and every folder in it 700, every file 600.

The indexes hold the indexed text in the clear, so another user of the machine must not read them
without the password. Under the usual umask (022) SQLite and usearch would create files anyone can
read; passageway creates each folder and file with the owner's bits only, and at start repairs
the modes of a folder made by an older version (or by hand), with one warning.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger("passageway.data")

FOLDER_MODE = 0o700
FILE_MODE = 0o600


def private_folder(path: Path) -> Path:
    """Create ``path`` and each missing parent readable by the owner only (as the XDG base
    directory rules ask of a data folder); folders that exist are kept as they are.

    ``Path.mkdir(parents=True)`` would give the parents the umask's mode (755): the data folder
    itself, made on the way to the model folder, would then need a repair at the next start.
    """
    missing = []
    folder = path
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=FOLDER_MODE)
        except FileExistsError:
            pass  # made meanwhile by another process
        else:
            os.chmod(folder, FOLDER_MODE)  # mkdir's mode is masked by the umask; 700 needs no more
    if not path.is_dir():
        path.mkdir()  # raises the one-line FileExistsError of a file in the way
    return path


def private_file(path: Path) -> Path:
    """Create an empty ``path`` with mode 600 unless it exists, so that whatever opens it next
    (SQLite, which gives its ``-wal`` and ``-shm`` files the database's mode) keeps that mode."""
    private_folder(path.parent)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return path
    os.close(descriptor)
    return path


def secure_data_folder(path: Path) -> int:
    """Create the data folder private, or make an existing one private; returns the number of
    folders and files whose modes were repaired (and warns once when there were any)."""
    private_folder(path)
    repaired = 0
    for folder, _folders, files in os.walk(path):
        for name in (folder, *(os.path.join(folder, file) for file in files)):
            try:
                status = os.lstat(name)
            except FileNotFoundError:
                continue  # removed meanwhile (a temporary file)
            mode = stat.S_IMODE(status.st_mode)
            if stat.S_ISLNK(status.st_mode) or not mode & 0o077:
                continue
            os.chmod(name, mode & ~0o077)  # the owner keeps what it had; no one else keeps anything
            repaired += 1
    if repaired:
        log.warning(
            "the data folder %s was readable by other users of this machine (%d folders and files); "
            "passageway made it private (folders 700, files 600)", path, repaired,
        )
    return repaired
