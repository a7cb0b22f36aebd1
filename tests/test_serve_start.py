"""What a user meets when the server starts and stops: the password file `init` wrote, a port in
use, the boxed summary of configuration problems, and Ctrl-C with an MCP client connected."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import urllib.request

import aiohttp
import pytest

from passageway.kernel import cli
from passageway.kernel.commands import serve as serve_command
from tests.cli_helpers import passageway_log, process_environment, toy_command, use_environment
from tests.server_helpers import PASSWORD, free_port, write_instance

__all__ = ["passageway_log"]


@pytest.fixture
def started(monkeypatch):  # type: ignore[no-untyped-def]
    """Stands in for run_server: records what serve would run, and returns at once."""
    calls: list[dict[str, object]] = []

    def record(kernel, host, port, **options):  # type: ignore[no-untyped-def]
        listener = options.get("listener")
        calls.append({"kernel": kernel, "host": host, "port": port})
        if listener is not None:
            listener.close()

    monkeypatch.setattr("passageway.kernel.server.run_server", record)
    return calls


def test_serve_reads_the_password_file_init_wrote(tmp_path, monkeypatch, capsys, started, passageway_log):
    use_environment(monkeypatch, {"HOME": str(tmp_path)})
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cli.main(["init"]) == 0
    capsys.readouterr()
    assert cli.main(["--port", str(free_port())]) == 0
    assert len(started) == 1
    password_file = tmp_path / ".config" / "passageway" / "password"
    assert started[0]["kernel"].password == password_file.read_text().strip()
    err = capsys.readouterr().err
    assert f"INFO passageway.server: password read from {password_file}\n" in err
    assert password_file.read_text().strip() not in err


def test_serve_without_sources_says_how_to_add_one(tmp_path, monkeypatch, capsys, started, passageway_log):
    """After a bare `init` the server listened and logged nothing more: no hint that it has no source."""
    monkeypatch.delenv("UV_RUN_RECURSION_DEPTH", raising=False)  # hints name `passageway`
    use_environment(monkeypatch, {"HOME": str(tmp_path)})
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cli.main(["init"]) == 0
    capsys.readouterr()
    assert cli.main(["--port", str(free_port())]) == 0
    config = tmp_path / ".config" / "passageway" / "passageway.toml"
    assert (f"WARNING passageway.server: no sources in {config}: add a [[connector]] table there "
            "(or run `passageway init --folder DIR`), then restart the server\n") in capsys.readouterr().err


def test_serve_without_any_password_names_the_file_init_writes(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("UV_RUN_RECURSION_DEPTH", raising=False)  # hints name `passageway`
    use_environment(monkeypatch, {"HOME": str(tmp_path)})
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cli.main(["serve"]) == 2
    path = tmp_path / ".config" / "passageway" / "password"
    assert capsys.readouterr().err == (
        f"passageway: no password is set, and the server does not run without one. Run `passageway init` "
        f"(it writes {path}), or set PASSAGEWAY_LOGIN_PASSWORD or PASSAGEWAY_LOGIN_PASSWORD_FILE.\n"
    )


def test_options_win_over_the_environment(tmp_path, monkeypatch, started, passageway_log):
    environ = write_instance(tmp_path)
    use_environment(monkeypatch, environ)
    other = tmp_path / "other.toml"
    other.write_text('[embedder]\nkind = "toy"\n')
    port = free_port()
    from tests.cli_helpers import toy_manager

    toy_manager(monkeypatch)
    assert cli.main(["serve", "--host", "127.0.0.1", "--port", str(port), "--config", str(other)]) == 0
    kernel = started[0]["kernel"]
    assert (started[0]["host"], started[0]["port"]) == ("127.0.0.1", port)
    assert kernel.settings.config_path == other and kernel.settings.connectors == ()


def test_a_port_in_use_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    environ = write_instance(tmp_path)
    use_environment(monkeypatch, environ)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert cli.main(["serve", "--port", str(port)]) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        f"passageway: port {port} on 127.0.0.1 is already in use (another passageway?); "
        "pick another with --port N or PASSAGEWAY_PORT\n"
    )
    assert captured.out == ""


def test_a_broken_config_is_boxed_at_start(tmp_path, monkeypatch, capsys, started, passageway_log):
    environ = write_instance(tmp_path, config="[[connector]]\nnmae = 'typo'\n")
    use_environment(monkeypatch, environ)
    assert cli.main(["serve", "--port", str(free_port())]) == 0
    assert started[0]["kernel"].config_error is not None  # the server still runs, to say so at /health
    err = capsys.readouterr().err
    box = [line for line in err.splitlines() if line.startswith(("+", "|"))]
    # The typo, and so no `name` and no `command`: all three at once, each with its line.
    assert box[0].startswith("+-- passageway: 3 problems at start ---")
    assert box[-1] == "+" + "-" * (len(box[0]) - 2) + "+"
    assert len(box[0]) >= 78 and all(len(line) == len(box[0]) for line in box)
    text = " ".join(line.strip("| ") for line in box[1:-1])
    assert "nmae" in text and f"{tmp_path / 'passageway.toml'}:2: unknown key" in text
    assert "`name` is required" in text and "`command` is required: the program and its" in text
    assert "The server runs anyway and reports the same at http://127.0.0.1:" in text


def test_a_missing_connector_command_is_boxed_with_its_line(
    tmp_path, monkeypatch, capsys, started, passageway_log
):
    config = (
        '[embedder]\nkind = "toy"\n\n'
        '[[connector]]\nname = "first"\ncommand = ["/bin/sh", "-c", "true"]\n\n'
        '[[connector]]\nname = "notes"\n# the notes\ncommand = ["/no/such/python", "-m", "x"]\n'
    )
    environ = write_instance(tmp_path, config=config)
    use_environment(monkeypatch, environ)
    from tests.cli_helpers import toy_manager

    toy_manager(monkeypatch)
    assert cli.main(["serve", "--port", str(free_port())]) == 0
    err = capsys.readouterr().err
    box = [line.strip("| ") for line in err.splitlines() if line.startswith("|")]
    assert " ".join(box).startswith(
        f"- connector 'notes': command not found: /no/such/python (the `command` at "
        f"{tmp_path / 'passageway.toml'}:11; connectors run with an empty environment, "
        "so give an absolute path)"
    )
    assert "first" not in " ".join(box)


async def test_ctrl_c_with_an_mcp_client_connected_ends_its_stream_and_stops(tmp_path):
    # Ctrl-C stops quickly because the stop sequence ends every MCP session itself, so the open
    # GET /mcp stream finishes instead of holding the server until aiohttp cancels it. The test
    # checks those events (the stream ends, the sessions close, a clean exit), not a stopwatch:
    # a busy machine made a 2 s bound fail while the log showed a clean stop.
    environ = process_environment(write_instance(tmp_path), PASSAGEWAY_PORT=str(free_port()))
    url = f"http://127.0.0.1:{environ['PASSAGEWAY_PORT']}"
    server = subprocess.Popen(toy_command(["serve"]), env=environ, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(3000):  # a wait only: up to five minutes or so on a busy machine
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
                    if json.loads(response.read())["status"] == "ok":
                        break
            except OSError:
                pass
            assert server.poll() is None, "the server exited before it answered"
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the server did not start")
        headers = {"Authorization": f"Bearer {PASSWORD}", "Accept": "application/json, text/event-stream"}
        async with aiohttp.ClientSession(headers=headers) as client:
            client_info = {"name": "test", "version": "1"}
            hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client_info}}
            async with client.post(f"{url}/mcp", json=hello) as response:
                session = {"mcp-session-id": response.headers["mcp-session-id"]}
                await response.read()
            ready = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            async with client.post(f"{url}/mcp", json=ready, headers=session) as response:
                await response.read()
            # The stream a client keeps open for server messages: it never ends by itself.
            stream = await client.get(f"{url}/mcp", headers={**session, "Accept": "text/event-stream"})
            assert stream.status == 200
            server.send_signal(signal.SIGINT)
            # The stream ends because the server ended the session (read to its end; the bound
            # only keeps a broken stop from hanging the suite).
            await asyncio.wait_for(stream.read(), timeout=60)
            stream.close()
        code = await asyncio.to_thread(server.wait, 60)
    finally:
        if server.poll() is None:
            server.kill()
        _, err = server.communicate(timeout=30)
    assert code == 0, err
    assert "INFO passageway.server: stopping: closing 1 open connection" in err
    assert "INFO passageway.mcp: closing 1 MCP session\n" in err
    assert "INFO passageway.mcp: MCP sessions closed in " in err
    # Nothing waited out the stop's limit: no handler was cancelled, no session left open.
    assert "Traceback" not in err and "ERROR" not in err, err


def test_serve_has_host_port_and_config_options():
    parser, _ = cli.build_parser()
    args = parser.parse_args(["serve", "--host", "0.0.0.0", "--port", "9000", "--config", "x.toml"])
    assert (args.host, args.port, str(args.config)) == ("0.0.0.0", 9000, "x.toml")
    assert serve_command.NAME == "serve"


def test_serve_holds_its_data_folder_while_it_runs(tmp_path, monkeypatch, passageway_log):
    from passageway.kernel.commands.server_lock import server_running

    environ = write_instance(tmp_path)
    use_environment(monkeypatch, environ)
    data_dir = tmp_path / "data"
    monkeypatch.setenv("PASSAGEWAY_DATA_DIR", str(data_dir))
    seen: list[bool] = []

    def running(kernel, host, port, **options):  # type: ignore[no-untyped-def]
        seen.append(server_running(data_dir))
        options["listener"].close()

    monkeypatch.setattr("passageway.kernel.server.run_server", running)
    assert cli.main(["--port", str(free_port())]) == 0
    assert seen == [True]
    assert not server_running(data_dir)  # released when the server stops
