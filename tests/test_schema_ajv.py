"""The ajv script of docs/schemas-other-languages.md runs as written and agrees with the table.

Needs Node.js and npm; it installs ajv-cli from the npm registry into a temporary folder and is
skipped, with the reason, when node or npm is missing or the install fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "schemas-other-languages.md"
SCHEMA = ROOT / "schemas" / "connector-protocol.schema.json"
EXAMPLE = ROOT / "docs" / "examples" / "folder_connector.py"
TABLE = ROOT / "schemas" / "examples" / "connector-messages.json"

pytestmark = pytest.mark.npm


def shell_blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


@pytest.fixture(scope="module")
def ajv(tmp_path_factory) -> str:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node.js and npm are not installed; the ajv example cannot run here")
    install = shell_blocks()[0].splitlines()[0]
    assert install.startswith("npm install --prefix .ajv ")
    folder = tmp_path_factory.mktemp("ajv")
    done = subprocess.run(install, shell=True, cwd=folder, capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        pytest.skip(f"npm could not install ajv-cli (is the npm registry reachable?): {done.stderr[-300:]}")
    binary = folder / ".ajv" / "node_modules" / ".bin" / "ajv"
    assert binary.exists()
    return str(binary)


def run_script(ajv: str, cwd: Path, folder: Path, connector: str) -> subprocess.CompletedProcess:
    script = shell_blocks()[1]
    environment = {
        "PATH": os.environ["PATH"], "AJV": ajv, "SCHEMA": str(SCHEMA), "CONNECTOR": connector,
        "FOLDER": str(folder),
    }
    return subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=60)


def test_the_pages_script_accepts_the_examples_output(ajv, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("Lighthouses guide ships.")
    (notes / "b.txt").write_text("Fog horns warn them.")
    done = run_script(ajv, tmp_path, notes, f"python3 {EXAMPLE}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "lines/list-00002.json valid" in done.stdout + done.stderr
    assert "lines/fetch-00001.json valid" in done.stdout + done.stderr


def test_the_pages_script_refuses_a_bad_record(ajv, tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text(
        "import json, sys\n"
        "if sys.argv[1] == 'list': print(json.dumps({'id': 'a.txt', 'version': '1'}))\n"
        "if sys.argv[1] == 'fetch':\n"
        "    print(json.dumps({'id': 'a.txt', 'title': '', 'url': '', 'version': '1', 'sections': []}))\n"
    )
    done = run_script(ajv, tmp_path, tmp_path, f"python3 {broken}")
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "lines/fetch-00001.json invalid" in output and "/title" in output


def test_ajv_agrees_with_the_table(ajv, tmp_path):
    schema = json.loads(SCHEMA.read_text())
    rows = [row for row in json.loads(TABLE.read_text()) if row.get("schema", "connector-protocol")
            == "connector-protocol"]
    for definition in sorted({row["definition"] for row in rows}):
        wrapper = tmp_path / f"{definition}.schema.json"
        wrapper.write_text(json.dumps({"$schema": schema["$schema"],
                                       "$ref": f"{schema['$id']}#/$defs/{definition}"}))
        folder = tmp_path / definition
        folder.mkdir()
        expected = {}
        for number, row in enumerate(rows):
            if row["definition"] == definition:
                path = folder / f"row-{number:03d}.json"
                path.write_text(json.dumps(row["message"]))
                expected[path.name] = row["valid"]
        done = subprocess.run([ajv, "validate", "--spec=draft2020", "-s", str(wrapper), "-r", str(SCHEMA),
                               "-d", f"{folder}/*.json"], capture_output=True, text=True, timeout=60)
        output = done.stdout + done.stderr
        for name, valid in expected.items():
            verdict = re.search(rf"{re.escape(name)} (valid|invalid)", output)
            assert verdict, f"ajv said nothing about {name}: {output[-500:]}"
            assert (verdict.group(1) == "valid") == valid, f"{definition} {name}: ajv says {verdict.group(1)}"
