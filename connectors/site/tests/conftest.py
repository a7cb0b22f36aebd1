"""A hand-made site indexed by `passageway index`, and the connector run on it as a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

COMMAND = [sys.executable, "-m", "passageway_connector_site"]
SITE = Path(__file__).resolve().parents[3] / "plugins" / "passage-index" / "tests" / "fixtures" / "site"


class SiteRunner:
    """Calls the connector on one site folder with an almost empty environment, as the core does."""

    def __init__(self, site_dir: Path) -> None:
        self.site_dir = site_dir

    def run(self, *argv: str, ids: list[str] | None = None, **settings: str) -> subprocess.CompletedProcess:
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(self.site_dir.parent),
               "PASSAGEWAY_PROTOCOL": "1", "SITE_DIR": str(self.site_dir), **settings}
        stdin = "".join(json.dumps({"id": item_id}) + "\n" for item_id in ids or [])
        return subprocess.run([*COMMAND, *argv], input=stdin, capture_output=True, env=env, timeout=60,
                              text=True, encoding="utf-8")

    def records(self, *argv: str, ids: list[str] | None = None, **settings: str) -> list[dict]:
        """The lines a successful call printed, decoded."""
        result = self.run(*argv, ids=ids, **settings)
        assert result.returncode == 0, result.stderr
        return [json.loads(line) for line in result.stdout.splitlines()]

    def fetch_all(self, **settings: str) -> list[dict]:
        ids = [entry["id"] for entry in self.records("list", **settings)]
        return self.records("fetch", ids=ids, **settings)


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """The fixture site of the passage index tests, copied and indexed."""
    from passageway_passage_index import build_index

    folder = tmp_path / "site-dist"
    shutil.copytree(SITE, folder)
    build_index(folder)
    return folder


@pytest.fixture
def connector(site: Path) -> SiteRunner:
    return SiteRunner(site)
