"""``passageway`` itself: how a word that is no command is answered."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from passageway.kernel import cli


def test_an_unknown_command_is_named_and_the_commands_are_listed(capsys):
    assert cli.main(["frobnicate"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.splitlines()
    assert line.startswith("passageway: unknown command 'frobnicate'; the commands are: ")
    _, names = cli.build_parser()
    assert all(name in line for name in names)
    assert "unrecognized arguments" not in captured.err


def test_a_misspelt_command_gets_the_closest_one(capsys):
    assert cli.main(["--instance", "work", "statsu"]) == 2
    assert "unknown command 'statsu'; did you mean `status`? the commands are:" in capsys.readouterr().err


def test_options_without_a_command_still_run_the_server(monkeypatch):
    ran = []
    monkeypatch.setattr("passageway.kernel.commands.serve.run", lambda args: ran.append(args.port) or 0)
    assert cli.main(["--port", "8099"]) == 0
    assert ran == [8099]


def test_the_index_command_without_its_package_names_the_package_and_how_to_install_it(monkeypatch, capsys):
    monkeypatch.setenv("PASSAGEWAY_LOAD_PLUGINS", "")  # as if passageway-passage-index were not installed
    assert cli.main(["index", "site-dist"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert "unknown command 'index'" in line
    assert "passageway-passage-index" in line and "plugins/passage-index" in line
    assert "uv sync --all-packages" in line and "--with ./plugins/passage-index" in line


def _into_a_closed_pipe(arguments: list[str], **environ: str) -> subprocess.CompletedProcess[str]:
    """``passageway ARGUMENTS`` with its stdout a pipe whose reader has already gone."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        return subprocess.run(
            [sys.executable, "-m", "passageway.kernel.cli", *arguments], stdout=writer,
            stderr=subprocess.PIPE, text=True, timeout=120, env={**os.environ, **environ},
        )
    finally:
        os.close(writer)


@pytest.mark.parametrize(("arguments", "code"),
                         [(["--help"], 0), (["plugins"], 0), (["completion", "bash"], 0)])
def test_output_into_a_closed_pipe_is_dropped_without_a_traceback(arguments, code):
    done = _into_a_closed_pipe(arguments, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}",
                               UV_RUN_RECURSION_DEPTH="")
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == code, done.stderr


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps({"status": "ok", "version": "0", "embedder": {"state": "ok"},
                           "sources": {"notes": {"state": "ok", "items": 1, "passages": 2}}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_status_into_a_closed_pipe_keeps_its_exit_code():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        for arguments in (["status", "--url", url], ["status", "--json", "--url", url]):
            done = _into_a_closed_pipe(arguments, PASSAGEWAY_LOGIN_PASSWORD="pw")
            assert "Traceback" not in done.stderr, done.stderr
            assert done.returncode == 0, done.stderr
    finally:
        server.shutdown()
        server.server_close()
