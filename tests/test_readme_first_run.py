"""The README's "your own sources" paragraph, followed literally, reaches a first answer.

The test reads the commands from the README itself: `uv run passageway ...` runs the project's
own `passageway` script (what `uv run` runs once the environment is synced), in a fresh home
folder, with `~/notes` a temporary folder of markdown files and the placeholder question replaced
by one those files answer. The only other change is the port, through `PASSAGEWAY_PORT`, so that
the test never meets another server on 8082. It uses the built-in model, as a user would.

Two things differ from a user's first run, both to spare the test suite's processors. The
built-in model's ONNX conversion, which a first start makes, is the test session's one conversion
(tests/e5_onnx_helpers.converted_folder), placed where the start would write it; the conversion
and the start's choice of engine are tested in tests/test_e5_onnx_convert.py. And the wait for the
first build asks ``/health`` from the test's own process instead of starting `passageway status`
twice a second; the README's `status` and `status --json` run once it is ready.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.e5_onnx_helpers import seed_converted_model
from tests.server_helpers import free_port

ROOT = Path(__file__).resolve().parents[1]
PASSAGEWAY = Path(sys.executable).parent / "passageway"

NOTES = {
    "lighthouse.md": "# The lighthouse at Kap Arkona\n\nThe lighthouse at Kap Arkona on the island of Rügen "
                     "was built by Karl Friedrich Schinkel in 1827. Its light can be seen 22 nautical miles "
                     "out at sea, and ships use it to find the passage between Rügen and Denmark at night.\n",
    "sourdough.md": "# Sourdough starter\n\nFeed the rye starter with equal parts of flour and water every "
                    "twelve hours. It is ready to bake with when it has doubled and smells sour.\n",
    "heating.md": "# Heating\n\nThe boiler is serviced every October; the filter of the heat pump is "
                  "cleaned in spring.\n",
}
QUESTION = "Who built the lighthouse at Kap Arkona?"


def readme_commands() -> list[list[str]]:
    """Every `uv run passageway ...` of the paragraph that starts with "For your own sources"."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    paragraph = text[text.index("For your own sources"):]
    paragraph = paragraph[: paragraph.index("\n\n")]
    return [shlex.split(command) for command in re.findall(r"`(uv run passageway[^`]*)`", paragraph)]


def test_the_paragraph_names_init_serve_status_and_search():
    commands = [command[2:] for command in readme_commands()]
    assert commands == [
        ["passageway", "init", "--folder", "~/notes"],
        ["passageway"],
        ["passageway", "status"],
        ["passageway", "search", "a question your notes answer"],
    ]


def health(port: str, home: Path) -> dict:
    """The server's ``/health`` report as `passageway status --json` prints it; {} while it does not
    answer yet."""
    password = (home / ".config" / "passageway" / "password").read_text(encoding="utf-8").strip()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/health", headers={"Authorization": f"Bearer {password}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read())
    except (OSError, ValueError):
        return {}


def test_following_the_paragraph_reaches_a_first_answer(tmp_path, tmp_path_factory):
    home = tmp_path / "home"
    notes = home / "notes"
    notes.mkdir(parents=True)
    for name, text in NOTES.items():
        (notes / name).write_text(text, encoding="utf-8")
    environ = {
        "HOME": str(home), "PATH": os.environ["PATH"], "PASSAGEWAY_PORT": str(free_port()),
        "LANG": "C.UTF-8",
    }

    def argv(command: list[str]) -> list[str]:
        assert command[:3] == ["uv", "run", "passageway"]
        replace = {"~/notes": str(notes), "a question your notes answer": QUESTION}
        return [str(PASSAGEWAY), *(replace.get(word, word) for word in command[3:])]

    init, serve, status, search = readme_commands()
    done = subprocess.run(argv(init), env=environ, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    seed_converted_model(tmp_path_factory, home / ".local" / "share" / "passageway")
    server = subprocess.Popen(
        argv(serve), env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 600  # the model loads first: minutes on a busy machine
        report: dict = {}
        while time.monotonic() < deadline and report.get("status") != "ok":
            assert server.poll() is None, server.communicate()[1]
            report = health(environ["PASSAGEWAY_PORT"], home)
            time.sleep(0.2)
        assert report.get("status") == "ok", report
        done = subprocess.run(
            [*argv(status), "--json"], env=environ, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["sources"]["notes"]["items"] == 3
        done = subprocess.run(argv(status), env=environ, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0 and "  notes: ok: 3 items" in done.stdout
        done = subprocess.run(argv(search), env=environ, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("1. **The lighthouse at Kap Arkona")
        assert "Schinkel" in done.stdout
    finally:
        server.send_signal(2)
        _, err = server.communicate(timeout=30)
    assert server.returncode == 0, err
    assert f"password read from {home / '.config' / 'passageway' / 'password'}" in err
