"""A hand-made site indexed by `passageway index`, and the connector run on it as a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

COMMAND = [sys.executable, "-m", "passageway_connector_site"]
SITE = Path(__file__).resolve().parents[3] / "tests" / "passage_index_fixtures" / "site"


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.stdout.splitlines()]


class SiteRunner:
    """Calls the connector on one site folder: ``run(mode, ...)`` and ``fetch_all(...)``."""

    def __init__(self, site_dir: Path) -> None:
        self.site_dir = site_dir

    def run(self, *argv: str, ids: list[str] | None = None, **settings: str) -> Result:
        return run(self.site_dir, *argv, ids=ids, **settings)

    def fetch_all(self, **settings: str) -> list[dict]:
        return fetch_all(self.site_dir, **settings)


def run(site_dir: Path, *argv: str, ids: list[str] | None = None, **settings: str) -> Result:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(site_dir.parent), "PASSAGEWAY_PROTOCOL": "1",
           "SITE_DIR": str(site_dir), **settings}
    stdin = "".join(json.dumps({"id": item_id}) + "\n" for item_id in ids or [])
    completed = subprocess.run([*COMMAND, *argv], input=stdin.encode(), capture_output=True, env=env,
                               timeout=60)
    return Result(completed.returncode, completed.stdout.decode("ascii"), completed.stderr.decode("utf-8"))


def fetch_all(site_dir: Path, **settings: str) -> list[dict]:
    listed = run(site_dir, "list", **settings)
    assert listed.code == 0, listed.stderr
    fetched = run(site_dir, "fetch", ids=[entry["id"] for entry in listed.records], **settings)
    assert fetched.code == 0, fetched.stderr
    return fetched.records


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """The fixture site of the passage index tests, copied and indexed."""
    from passageway.builtin.passage_index import build_index

    folder = tmp_path / "site-dist"
    shutil.copytree(SITE, folder)
    build_index(folder)
    return folder


@pytest.fixture
def connector(site: Path) -> SiteRunner:
    return SiteRunner(site)
