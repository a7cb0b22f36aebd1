"""A preset's files: verifying a model folder, and fetching the pinned files safely.

A model folder is valid only when its marker file (:data:`MARKER`) matches the preset's pins and
every file has the pinned checksum. Downloads go to a temporary file that is renamed into place
only after its checksum matched, and the marker is written last, so an interrupted or refused
download never leaves a folder that looks valid. The presets themselves, and where their folders
are, live in :mod:`passageway.builtin.embedders.models`.
"""

from __future__ import annotations

import hashlib
import json
import os
import ssl
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from passageway.builtin.embedders.models import ModelFile, Preset
from passageway.kernel.data_folder import private_folder
from passageway.kernel.errors import ModelError

MARKER = ".passageway-model.json"
"""Written last into a model folder after every file passed its checksum."""

_CHUNK = 1024 * 1024


# ---------------------------------------------------------------------------------------------
# Verification
# ---------------------------------------------------------------------------------------------


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _marker_content(preset: Preset) -> dict[str, object]:
    return {
        "preset": preset.name,
        "repo": preset.repo,
        "revision": preset.revision,
        "files": {file.local_name: file.sha256 for file in preset.files},
    }


def folder_problem(preset: Preset, folder: Path, *, check_hashes: bool = True) -> str | None:
    """Why ``folder`` does not hold a verified copy of ``preset``, or None when it does."""
    marker = folder / MARKER
    if not marker.is_file():
        return f"{folder} holds no verified copy of {preset.name}"
    try:
        recorded = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"{marker} is unreadable"
    if recorded != _marker_content(preset):
        return f"{folder} holds another revision or model than the preset {preset.name} pins"
    for file in preset.files:
        path = folder / file.local_name
        if not path.is_file() or path.stat().st_size != file.size:
            return f"{path} is missing or has the wrong size"
        if check_hashes and file_sha256(path) != file.sha256:
            return f"{path} fails its SHA-256 checksum"
    return None


# ---------------------------------------------------------------------------------------------
# Download
# ---------------------------------------------------------------------------------------------


def https_context() -> ssl.SSLContext:
    """Certificates checked against the operating system's trust store (truststore)."""
    import truststore

    return truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def file_url(hub: str, preset: Preset, file: ModelFile) -> str:
    return f"{hub.rstrip('/')}/{preset.repo}/resolve/{preset.revision}/{file.path}"


def download_preset(
    preset: Preset,
    folder: Path,
    hub: str,
    log: Callable[[str], None] = print,
    *,
    timeout: float = 60.0,
) -> Path:
    """Fetch and verify every file of ``preset`` into ``folder`` (blocking; run it in a thread).

    Files already there with the right checksum are kept. Each download is streamed into a
    temporary file in ``folder``, hashed on the way, and renamed into place only when the hash
    matches; the marker is written last.

    :raises ModelError: the hub cannot be reached, a transfer breaks off, or a file fails its
        checksum; nothing that looks valid is left behind.
    """
    if not preset.needs_download or preset.repo is None or preset.revision is None:
        raise ModelError(f"the preset {preset.name} ships inside its package; there is nothing to download")
    if not hub.startswith(("https://", "http://")):
        raise ModelError(f"PASSAGEWAY_MODEL_HUB must be an https:// address, got {hub!r}")
    private_folder(folder)  # downloads are private (mkstemp) like every file of the data folder
    # The marker goes first, so a folder being (re)written is never taken as valid.
    (folder / MARKER).unlink(missing_ok=True)
    context = https_context() if hub.startswith("https:") else None
    for file in preset.files:
        target = folder / file.local_name
        if target.is_file() and target.stat().st_size == file.size and file_sha256(target) == file.sha256:
            continue
        _fetch(file_url(hub, preset, file), file, target, context, log, timeout)
    _write_atomically(folder / MARKER, json.dumps(_marker_content(preset), indent=2).encode("utf-8"))
    log(f"model {preset.name}: {len(preset.files)} files verified in {folder}")
    return folder


def _fetch(
    url: str,
    file: ModelFile,
    target: Path,
    context: ssl.SSLContext | None,
    log: Callable[[str], None],
    timeout: float,
) -> None:
    handle, temporary_name = tempfile.mkstemp(
        prefix=f".{file.local_name}.", suffix=".part", dir=target.parent
    )
    temporary = Path(temporary_name)
    digest = hashlib.sha256()
    received = 0
    next_report = 0.1
    try:
        # The hub is an http(s) address (checked in download_preset), never a file: URL.
        request = urllib.request.Request(url, headers={"User-Agent": "passageway-model-download"})  # noqa: S310
        opened = urllib.request.urlopen(request, timeout=timeout, context=context)  # noqa: S310
        with os.fdopen(handle, "wb") as output, opened as response:
            while chunk := response.read(_CHUNK):
                output.write(chunk)
                digest.update(chunk)
                received += len(chunk)
                if file.size >= 10 * _CHUNK and received >= next_report * file.size:
                    percent = received * 100 // file.size
                    log(f"downloading {file.path}: {percent}% of {file.size // _CHUNK} MB")
                    next_report += 0.1
        if received != file.size:
            raise ModelError(
                f"the download of {url} broke off or has the wrong size ({received} of {file.size} bytes); "
                "run `passageway model download` again"
            )
        if digest.hexdigest() != file.sha256:
            raise ModelError(
                f"{url} fails its checksum (SHA-256 {digest.hexdigest()}, pinned {file.sha256}); "
                "the file was not kept. Check PASSAGEWAY_MODEL_HUB, or a proxy that rewrites downloads"
            )
        os.replace(temporary, target)
    except ModelError:
        raise
    except urllib.error.HTTPError as error:
        raise ModelError(f"the hub answered {error.code} for {url}; check PASSAGEWAY_MODEL_HUB") from None
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", None) or error
        raise ModelError(
            f"cannot download {url} ({reason}). Without network access, fetch the files on another machine "
            "with `passageway model download`, copy the folder over and set download = false"
        ) from None
    finally:
        temporary.unlink(missing_ok=True)


def _write_atomically(path: Path, content: bytes) -> None:
    handle, temporary_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as output:
            output.write(content)
        os.replace(temporary_name, path)
    finally:
        Path(temporary_name).unlink(missing_ok=True)


def ensure_model_sync(
    preset: Preset,
    folder: Path,
    *,
    hub: str,
    download: bool,
    log: Callable[[str], None] = print,
) -> Path:
    """The verified folder of ``preset``, downloading it first when allowed (blocking)."""
    problem = folder_problem(preset, folder)
    if problem is None:
        return folder
    if not download:
        raise ModelError(
            f"the model {preset.name} is not ready ({problem}) and download = false. "
            f"Run `passageway model download {preset.name}`, or copy a verified folder to {folder}"
        )
    log(f"model {preset.name}: {problem}; fetching {preset.size // _CHUNK} MB from {hub}")
    return download_preset(preset, folder, hub, log)
