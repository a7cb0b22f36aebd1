"""``passageway search`` and ``passageway status`` against a live server, with and without --json,
and ``search --local`` in-process: the exact lines, and the exit codes."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from passageway.kernel import cli
from passageway.kernel.query.rendering import NOTHING
from tests.cli_helpers import built_server, toy_manager, use_environment
from tests.server_helpers import make_kernel, running_server, write_instance

TELESCOPE = "how does a refracting telescope gather starlight with a lens?"
UNRELATED = "quarterly tax filing deadlines for freelance accountants"


async def run_cli(*arguments: str) -> int:
    """``passageway ARGUMENTS`` in a thread, so that the server in this loop can answer it."""
    return await asyncio.to_thread(cli.main, list(arguments))


async def test_status_reads_the_report_and_exits_0(tmp_path, monkeypatch, capsys):
    async with built_server(tmp_path, monkeypatch) as (kernel, url):
        assert await run_cli("status", "--url", url) == 0
        lines = capsys.readouterr().out.splitlines()
        success = kernel.health(include_errors=True)["sources"]["notes"]["last_success"]
        assert lines == [
            f"passageway {kernel.version} at {url}: ok",
            "embedder toy-hash-64: ok",
            "sources:",
            f"  notes: ok: 4 items, 4 passages; last success {success}",
        ]
        assert await run_cli("status", "--url", url, "--json") == 0
        assert json.loads(capsys.readouterr().out) == kernel.health(include_errors=True)


async def test_status_of_a_failing_source_says_why_and_exits_1(tmp_path, monkeypatch, capsys):
    async with built_server(tmp_path, monkeypatch, fail="check,list,fetch") as (kernel, url):
        assert await run_cli("status", "--url", url) == 1
        out = capsys.readouterr().out
        assert f"at {url}: degraded\n" in out
        error = kernel.health(include_errors=True)["sources"]["notes"]["error"]
        assert f"  notes: failing: 0 items, 0 passages; error: {error}\n" in out
        assert await run_cli("status", "--url", url, "--json") == 1
        assert json.loads(capsys.readouterr().out)["status"] == "degraded"
        # Without the password the report has no error text, and the page says how to see it.
        monkeypatch.delenv("PASSAGEWAY_LOGIN_PASSWORD")
        monkeypatch.setenv("HOME", str(tmp_path / "nobody"))
        assert await run_cli("status", "--url", url) == 1
        out = capsys.readouterr().out
        assert "  notes: failing: 0 items, 0 passages\n" in out
        assert error not in out
        assert "errors are shown with the password" in out
        # A wrong password is treated as none by /health: the note must not ask for one that was sent.
        monkeypatch.setenv("PASSAGEWAY_LOGIN_PASSWORD", "not-the-password")
        assert await run_cli("status", "--url", url) == 1
        out = capsys.readouterr().out
        assert error not in out and "not-the-password" not in out
        assert out.endswith("(the server hides the errors: it refused the password from "
                            "PASSAGEWAY_LOGIN_PASSWORD; use the one its first log line names)\n")


async def test_search_prints_the_tools_rendering(tmp_path, monkeypatch, capsys):
    async with built_server(tmp_path, monkeypatch) as (kernel, url):
        from passageway.kernel.query.rendering import render_answer

        expected = render_answer(await kernel.recall(TELESCOPE))
        assert await run_cli("search", "--url", url, TELESCOPE) == 0
        assert capsys.readouterr().out == expected + "\n"
        assert "Refracting telescope" in expected
        assert await run_cli("search", "--url", url, "--json", TELESCOPE) == 0
        assert json.loads(capsys.readouterr().out) == {"silent": False, "text": expected}


async def test_search_exits_1_on_silence(tmp_path, monkeypatch, capsys):
    async with built_server(tmp_path, monkeypatch) as (_, url):
        assert await run_cli("search", "--url", url, UNRELATED) == 1
        assert capsys.readouterr().out == NOTHING + "\n"
        assert await run_cli("search", "--url", url, "--json", UNRELATED) == 1
        assert json.loads(capsys.readouterr().out) == {"silent": True, "text": NOTHING}


async def test_search_during_a_build_is_silence_exit_1(tmp_path, monkeypatch, capsys):
    """While a source builds, silence reads "Nothing relevant in the sources indexed so far. Still
    indexing: ..."; it is still silence, told by the hook's empty context, not by a text."""
    from passageway.kernel.query.rendering import NOTHING_YET
    from passageway.kernel.records import Answer

    environ = write_instance(tmp_path)
    use_environment(monkeypatch, environ)
    kernel = make_kernel(environ)

    async def still_building(question: object, **options: object) -> Answer:
        return Answer(notes=("notes: 2 of 4 passages searchable by meaning so far",))

    monkeypatch.setattr(kernel, "recall", still_building)
    async with running_server(kernel, start_sync=False) as url:
        assert kernel.health(include_errors=True)["sources"]["notes"]["state"] == "indexing"
        assert await run_cli("search", "--url", url, "--json", UNRELATED) == 1
        answer = json.loads(capsys.readouterr().out)
        assert answer["silent"] is True
        assert answer["text"].startswith(f"{NOTHING_YET} Still indexing: notes: ")


async def test_search_without_sources_says_there_are_none(tmp_path, monkeypatch, capsys):
    """After a bare `init`, "Nothing relevant in the sources." read as if the sources were searched."""
    monkeypatch.delenv("UV_RUN_RECURSION_DEPTH", raising=False)  # hints name `passageway`
    async with built_server(tmp_path, monkeypatch, config='[embedder]\nkind = "toy"\n') as (_, url):
        assert await run_cli("search", "--url", url, TELESCOPE) == 1
        assert capsys.readouterr().out == (
            "No sources to search: add a [[connector]] to passageway.toml "
            "(or run `passageway init --folder DIR`), then restart the server.\n"
        )


async def test_search_with_a_failing_source_names_it(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("UV_RUN_RECURSION_DEPTH", raising=False)
    async with built_server(tmp_path, monkeypatch, fail="check,list,fetch") as (_, url):
        assert await run_cli("search", "--url", url, TELESCOPE) == 1
        assert capsys.readouterr().out == f"{NOTHING} Failing: notes (`passageway status` says why).\n"


async def test_search_while_the_server_starts_says_so_not_check_url(tmp_path, monkeypatch, capsys):
    import socket

    from passageway.kernel.server import answer_starting

    environ = write_instance(tmp_path)
    use_environment(monkeypatch, environ)
    kernel = make_kernel(environ)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    runner = await answer_starting(kernel, listener)
    try:
        assert await run_cli("search", "--url", url, TELESCOPE) == 2
        err = capsys.readouterr().err
        assert err == (f"passageway: the server at {url} is starting (its embedding model is loading; "
                       "the first start on a machine converts it once, up to a minute); ask again shortly\n")
        assert "check --url" not in err.lower()
    finally:
        await runner.cleanup()
        listener.close()


async def test_search_does_not_import_the_mcp_client(tmp_path, monkeypatch):
    """The MCP client takes seconds to import; the plain HTTP question needs none of it."""
    import subprocess
    import sys

    async with built_server(tmp_path, monkeypatch) as (_, url):
        probe = ("import sys\nfrom passageway.kernel import cli\ncode = cli.main(sys.argv[1:])\n"
                 "print('MCP' if any(n == 'mcp' or n.startswith(('mcp.', 'httpx')) for n in sys.modules) "
                 "else 'none', code)\n")
        done = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-c", probe, "search", "--url", url, TELESCOPE],
            capture_output=True, text=True, timeout=120, env={**os.environ},
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[-1] == "none 0", done.stdout


async def test_search_with_a_wrong_password_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    environ = write_instance(tmp_path)
    use_environment(monkeypatch, environ)
    kernel = make_kernel(environ)
    async with running_server(kernel, start_sync=False) as url:
        monkeypatch.setenv("PASSAGEWAY_LOGIN_PASSWORD", "not-the-password")
        assert await run_cli("search", "--url", url, TELESCOPE) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err == (
            f"passageway: {url} refused the password from PASSAGEWAY_LOGIN_PASSWORD (HTTP 401); use the one "
            "that server reads (its first log line names it), or name your own server with --url\n"
        )
        assert "not-the-password" not in captured.err


def test_search_and_status_without_a_server_are_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("UV_RUN_RECURSION_DEPTH", raising=False)  # hints name `passageway`
    from tests.server_helpers import free_port

    environ = write_instance(tmp_path)
    use_environment(monkeypatch, environ)
    url = f"http://127.0.0.1:{free_port()}"
    assert cli.main(["status", "--url", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"passageway: no passageway answers at {url} (")
    assert err.endswith("start it with `passageway`, or name its address with --url\n")
    assert err.count("\n") == 1
    assert cli.main(["search", "--url", url, TELESCOPE]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"passageway: no passageway answers at {url} (")
    assert err.endswith(
        "start it with `passageway`, name its address with --url, or search the data folder with --local\n"
    )
    assert err.count("\n") == 1


def test_search_local_builds_an_empty_index_then_answers(tmp_path, monkeypatch, capsys):
    environ = write_instance(tmp_path)
    use_environment(monkeypatch, environ)
    toy_manager(monkeypatch)
    assert cli.main(["search", "--local", TELESCOPE]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("1. **Refracting telescope")
    assert captured.err == "passageway: building notes first\n"  # stderr is no terminal: no bar
    assert cli.main(["search", "--local", "--json", UNRELATED]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"silent": True, "text": NOTHING, "hits": []}
    assert captured.err == ""  # built already: nothing to build
    assert cli.main(["search", "--local", "--json", TELESCOPE]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert hits[0]["item_id"] == "telescope" and hits[0]["source"] == "notes"


def test_a_url_that_is_not_http_is_one_line(tmp_path, monkeypatch, capsys):
    use_environment(monkeypatch, write_instance(tmp_path))
    assert cli.main(["status", "--url", "file:///etc"]) == 2
    assert capsys.readouterr().err == (
        "passageway: --url file:///etc: give the server's http:// or https:// address\n"
    )


def test_status_of_a_starting_server_says_so_without_the_sources():
    from passageway.kernel.commands.status import HEALTHY, render_status

    report = {"status": "starting", "version": "0.1.0", "instance": None}
    assert render_status(report, "http://127.0.0.1:8082").splitlines() == [
        "passageway 0.1.0 at http://127.0.0.1:8082: starting",
        "  loading the embedding model (the first start on a machine converts it once, up to a minute) "
        "and opening the indexes; ask again shortly",
    ]
    assert "starting" in HEALTHY  # exit 0: it is on its way, like indexing


def test_search_local_beside_a_running_server_writes_nothing_into_its_folder(tmp_path, monkeypatch, capsys):
    from passageway.kernel.commands.server_lock import hold

    environ = write_instance(tmp_path)
    use_environment(monkeypatch, environ)
    toy_manager(monkeypatch)
    data_dir = Path(environ["PASSAGEWAY_DATA_DIR"])
    with hold(data_dir):  # what `passageway serve` holds while it runs
        before = sorted(path.name for path in data_dir.iterdir())
        assert cli.main(["search", "--local", TELESCOPE]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        running = f"passageway: a passageway server is running on this data folder ({data_dir})"
        assert captured.err.startswith(running)
        assert "without --local" in captured.err and captured.err.count("\n") == 1
        assert sorted(path.name for path in data_dir.iterdir()) == before  # no index written
    assert cli.main(["search", "--local", TELESCOPE]) == 0  # the server stopped: --local works


async def test_search_when_recall_fails_on_the_server_is_exit_2_not_silence(tmp_path, monkeypatch, capsys):
    from passageway.kernel.errors import EmbedderError

    environ = write_instance(tmp_path)
    use_environment(monkeypatch, environ)
    kernel = make_kernel(environ)

    async def failing(question: object, **options: object) -> None:
        raise EmbedderError("the embedder 'toy' stopped; see the server's log")

    monkeypatch.setattr(kernel, "recall", failing)
    async with running_server(kernel, start_sync=False) as url:
        assert await run_cli("search", "--url", url, TELESCOPE) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err == ("passageway: the server could not answer: the embedder 'toy' stopped; "
                                "see the server's log\n")


def test_the_status_example_of_the_docs_is_what_status_prints():
    """docs/cli.md shows `passageway status` mid-build; its lines are what render_status writes."""
    from passageway.kernel.commands.status import render_status

    page = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text(encoding="utf-8")
    section = page[page.index("## `passageway status`"):]
    example = section[section.index("```\n") + 4:section.index("\n```", section.index("```\n") + 4)]
    report = {
        "status": "indexing", "version": "0.1.0", "instance": None,
        "embedder": {"state": "ok", "name": "multilingual-e5-small-q4"},
        "sources": {
            "notes": {"state": "ok", "items": 412, "passages": 1630, "last_success": "2026-11-30T18:57:27Z"},
            "wiki": {"state": "indexing", "items": 120, "passages": 640, "stage": "passages", "fetched": 120,
                     "of": 900, "stored": 640, "ready": 610, "expected": 3600, "windows": 0,
                     "windows_expected": 9400, "rate": 6.2, "eta_seconds": 480},
        },
    }
    assert render_status(report, "http://127.0.0.1:8082").splitlines() == example.splitlines()
    windows = {"state": "indexing", "items": 412, "passages": 1630, "stage": "windows",
               "windows": 1200, "windows_expected": 2900, "eta_seconds": 120}
    shown = render_status({**report, "sources": {"notes": windows}}, "http://127.0.0.1:8082").splitlines()[-1]
    assert f"`{shown.strip()}`" in " ".join(section.split())
