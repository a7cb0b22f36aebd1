"""Run the markdown connector as the core does: a real subprocess with an almost empty environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

COMMAND = [sys.executable, "-m", "passageway_connector_markdown"]


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.stdout.splitlines()]

    @property
    def by_id(self) -> dict[str, dict]:
        return {record["id"]: record for record in self.records}


class Notes:
    """A temporary folder of notes and a way to call the connector on it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env: dict[str, str] = {}

    def write(self, relative: str, text: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    def run(self, *argv: str, ids: list[str] | None = None, **settings: str) -> Result:
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(self.root.parent), "PASSAGEWAY_PROTOCOL": "1",
               "FOLDER": str(self.root), **self.env, **settings}
        stdin = "".join(json.dumps({"id": item_id}) + "\n" for item_id in ids or [])
        completed = subprocess.run([*COMMAND, *argv], input=stdin.encode("utf-8"), capture_output=True,
                                   env=env, timeout=60)
        stdout, stderr = completed.stdout.decode("ascii"), completed.stderr.decode("utf-8")
        return Result(completed.returncode, stdout, stderr)

    def list(self, **settings: str) -> dict[str, str]:
        result = self.run("list", **settings)
        assert result.code == 0, result.stderr
        return {entry["id"]: entry["version"] for entry in result.records}

    def fetch_all(self, **settings: str) -> Result:
        return self.run("fetch", ids=sorted(self.list(**settings)), **settings)

    def item(self, item_id: str, **settings: str) -> dict:
        result = self.run("fetch", ids=[item_id], **settings)
        assert result.code == 0, result.stderr
        [record] = result.records
        return record


@pytest.fixture
def notes(tmp_path: Path) -> Notes:
    root = tmp_path / "notes"
    root.mkdir()
    return Notes(root)
