"""The server: health over HTTP, answering while sources build, broken configuration, the
passageway_add_routes hook, resource cleanup and the serve command's refusal without a password."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx2
from aiohttp import web

from passageway import hookimpl
from passageway.kernel import cli
from passageway.kernel.app import Kernel
from passageway.kernel.plugins import build_plugin_manager
from passageway.kernel.server import KERNEL_KEY, build_app
from passageway.testing.toy_embedder import plugin as toy_plugin
from tests.server_helpers import PASSWORD, make_kernel, running_server, wait_built, write_instance
from tests.waiting import hold_connector, until

AUTH = {"Authorization": f"Bearer {PASSWORD}"}


async def test_health_is_open_and_counts_items(tmp_path):
    kernel = make_kernel(write_instance(tmp_path))
    async with running_server(kernel) as url, httpx2.AsyncClient() as client:
        await wait_built(kernel)
        response = await client.get(f"{url}/health")
        assert response.status_code == 200
        report = response.json()
        assert report["status"] == "ok"
        assert report["sources"]["notes"] == {
            **report["sources"]["notes"], "state": "ok", "items": 4, "passages": 4,
        }
        assert report["embedder"]["name"] == "toy-hash-64"


async def test_failing_source_is_degraded_and_error_only_with_password(tmp_path):
    kernel = make_kernel(write_instance(tmp_path, fail="check,list,fetch"))
    async with running_server(kernel) as url, httpx2.AsyncClient() as client:
        await wait_built(kernel)
        response = await client.get(f"{url}/health")
        # 38.7: degraded was HTTP 200, so a check by status code kept the replica in rotation.
        assert response.status_code == 503
        public = response.json()
        assert public["status"] == "degraded"
        assert public["sources"]["notes"]["state"] == "failing"
        assert "error" not in public["sources"]["notes"]
        wrong = (await client.get(f"{url}/health", headers={"Authorization": "Bearer nope"})).json()
        assert "error" not in wrong["sources"]["notes"]
        private = (await client.get(f"{url}/health", headers=AUTH)).json()
        assert "check" in private["sources"]["notes"]["error"]


async def test_answers_while_a_source_is_still_building(tmp_path):
    # A slow connector: its listing waits for the test, so the first build is still at its start
    # when the test asks (a listing that took a fixed time could end first on a busy machine).
    environ = write_instance(tmp_path)
    gate = hold_connector(Path(environ["PASSAGEWAY_CONFIG"]), "list")
    kernel = make_kernel(environ)
    async with running_server(kernel) as url, httpx2.AsyncClient(timeout=60) as client:
        report = (await client.get(f"{url}/health")).json()
        assert report["status"] == "indexing"
        assert report["sources"]["notes"]["state"] == "indexing"
        response = await client.post(f"{url}/recall", json={"prompt": "how do lenses in a telescope work?"},
                                     headers=AUTH)
        assert response.status_code == 200
        # Silence, also while building: nothing for the hook to add above the prompt.
        assert response.json() == {"context": ""}
        gate.write_text("go", encoding="utf-8")
        await wait_built(kernel)
        assert (await client.get(f"{url}/health")).json()["status"] == "ok"


async def test_broken_configuration_still_serves_health(tmp_path):
    kernel = Kernel.broken("passageway.toml: unknown key 'nmae' in [[connector]] 1", environ={
        "PASSAGEWAY_LOGIN_PASSWORD": PASSWORD}, instance=None)
    async with running_server(kernel) as url, httpx2.AsyncClient() as client:
        response = await client.get(f"{url}/health")
        assert response.status_code == 503
        assert response.json()["status"] == "error"
        assert "nmae" not in response.text
        private = await client.get(f"{url}/health", headers=AUTH)
        assert "nmae" in private.json()["error"]
        recall = await client.post(f"{url}/recall", json={"prompt": "where does the rhine river flow?"},
                                   headers=AUTH)
        assert recall.status_code == 503
        assert recall.json()["context"] == ""


async def test_add_routes_hook_mounts_a_plugin_route(tmp_path):
    class Extra:
        @hookimpl
        def passageway_add_routes(self, app, kernel):  # type: ignore[no-untyped-def]
            async def hello(request: web.Request) -> web.Response:
                if not kernel.authorize(request):
                    return web.Response(status=401)
                return web.json_response({"sources": list(kernel.sources)})

            app.router.add_get("/hello", hello)

    environ = write_instance(tmp_path)
    manager = build_plugin_manager(environ, extra=(("toy", toy_plugin), ("extra", Extra())),
                                   load_entry_points=False)
    from passageway.kernel.config import load_settings

    kernel = Kernel.create(load_settings(environ), manager, environ)
    async with running_server(kernel) as url, httpx2.AsyncClient() as client:
        assert (await client.get(f"{url}/hello")).status_code == 401
        assert (await client.get(f"{url}/hello", headers=AUTH)).json() == {"sources": ["notes"]}
        assert (await client.get(f"{url}/health")).status_code == 200


async def test_cleanup_stops_sync_and_closes_resources(tmp_path):
    kernel = make_kernel(write_instance(tmp_path))
    app = build_app(kernel)
    assert app[KERNEL_KEY] is kernel
    async with running_server(kernel):
        await wait_built(kernel)
        assert kernel.syncs.tasks
        tasks = list(kernel.syncs.tasks.values())
    assert all(task.done() for task in tasks)
    assert kernel.embedder is None
    assert all(source.store is None for source in kernel.sources.values())


async def test_many_concurrent_hook_requests(tmp_path):
    kernel = make_kernel(write_instance(tmp_path))
    async with running_server(kernel) as url, httpx2.AsyncClient() as client:
        await wait_built(kernel)

        async def ask(number: int) -> int:
            response = await client.post(
                f"{url}/recall",
                json={"prompt": "how does a refracting telescope gather starlight with a lens?",
                      "session_id": f"s{number}"},
                headers=AUTH,
            )
            assert "Refracting telescope" in response.json()["context"]
            return response.status_code

        assert set(await asyncio.gather(*(ask(n) for n in range(16)))) == {200}


def test_serve_refuses_to_start_without_a_password(tmp_path, monkeypatch, capsys):
    environ = write_instance(tmp_path)
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("PASSAGEWAY_LOGIN_PASSWORD")
    monkeypatch.delenv("PASSAGEWAY_LOGIN_PASSWORD_FILE", raising=False)
    assert cli.main(["serve"]) == 2
    error = capsys.readouterr().err
    assert "PASSAGEWAY_LOGIN_PASSWORD" in error and "passageway init" in error


def test_serve_names_an_unreadable_password_file(tmp_path, monkeypatch, capsys):
    environ = write_instance(tmp_path)
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("PASSAGEWAY_LOGIN_PASSWORD")
    monkeypatch.setenv("PASSAGEWAY_LOGIN_PASSWORD_FILE", str(tmp_path / "missing-password"))
    assert cli.main([]) == 2
    assert "missing-password" in capsys.readouterr().err


def test_the_serve_command_runs_answers_and_stops_on_sigterm(tmp_path):
    import json
    import os
    import signal
    import subprocess
    import sys
    import time
    import urllib.request

    from tests.server_helpers import free_port

    environ = write_instance(tmp_path, config="")  # an empty configuration: no source, the default store
    port = free_port()
    environ.update({"PASSAGEWAY_PORT": str(port), "PATH": os.environ["PATH"], "PASSAGEWAY_LOG_LEVEL": "DEBUG",
                    "PASSAGEWAY_INSTANCE": "", "APP_VERSION": "7.7.7"})
    (tmp_path / "passageway.toml").write_text("[[connector]]\nnmae = 'typo'\n")  # broken on purpose
    process = subprocess.Popen([sys.executable, "-m", "passageway.kernel.cli", "serve"], env=environ,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300  # a wait only: a busy machine can take minutes
        report = None
        while time.monotonic() < deadline and report is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                    report = json.loads(response.read())
            except urllib.error.HTTPError as error:
                report = {"http": error.code, **json.loads(error.read())}
                if report["status"] == "starting":  # answered at once while the application builds
                    report = None
                    time.sleep(0.2)
            except OSError:
                time.sleep(0.2)
        assert report is not None, process.stderr.read() if process.poll() is not None else "no answer"
        assert report["http"] == 503 and report["status"] == "error" and report["version"] == "7.7.7"
    finally:
        process.send_signal(signal.SIGTERM)
        # and again once it stops, as a TERM to the process group of `uv run passageway` comes
        # twice (uv passes its own on): the stop stays clean
        assert process.stderr is not None
        before = []
        for line in process.stderr:
            before.append(line)
            if "stopping:" in line:
                process.send_signal(signal.SIGTERM)
                break
        _, rest = process.communicate(timeout=30)
        stderr = "".join(before) + rest
    assert process.returncode == 0, stderr
    assert "stopping at once" not in stderr
    assert "nmae" in stderr  # the log says what is broken
    assert PASSWORD not in stderr


async def test_a_sigterm_after_the_stop_began_is_ignored_until_the_process_exits(tmp_path):
    """The loop's own handler goes with the loop; what the process still does after that (the
    command's clean-up, the interpreter's exit) must not end at a late second SIGTERM."""
    import os
    import signal

    import aiohttp

    from passageway.kernel import server

    kernel = make_kernel(write_instance(tmp_path))
    listener = server.bind_socket("127.0.0.1", 0)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/health"
    before = signal.getsignal(signal.SIGTERM)
    serving = asyncio.create_task(server._serve(kernel, listener, "127.0.0.1", 0, None))
    try:
        async with aiohttp.ClientSession() as http:

            async def started() -> bool:  # the application answers: the signal handlers are in place
                async with http.get(url) as response:
                    return (await response.json())["status"] != "starting"

            await until(started, "the application takes over the socket")
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.wait_for(serving, 60)  # a bound for a hang only
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGTERM)  # this process (the test's) goes on
    finally:
        signal.signal(signal.SIGTERM, before)
        serving.cancel()


async def test_a_second_ctrl_c_stops_at_once_while_the_first_waits_for_a_request(
        tmp_path, monkeypatch, caplog):
    """The first Ctrl-C waits for running requests (here one that goes on until the test lets it
    go); a second one during that wait ends the process at once, with exit status 130."""
    import logging
    import os
    import signal

    import aiohttp

    from passageway.kernel import server

    entered, release = asyncio.Event(), asyncio.Event()
    exits: list[int] = []

    async def slow(request: web.Request) -> web.Response:
        entered.set()
        await release.wait()
        return web.Response(text="done")

    def with_slow_route(kernel: Kernel) -> web.Application:
        app = build_app(kernel)
        app.router.add_get("/slow", slow)
        return app

    monkeypatch.setattr(server, "build_app", with_slow_route)
    monkeypatch.setattr(server, "STOP_SECONDS", 600.0)  # the first stop waits for the request
    monkeypatch.setattr(server.os, "_exit", exits.append)  # records instead of ending the tests
    caplog.set_level(logging.INFO, "passageway.server")
    kernel = make_kernel(write_instance(tmp_path))
    listener = server.bind_socket("127.0.0.1", 0)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    before = signal.getsignal(signal.SIGTERM)
    serving = asyncio.create_task(server._serve(kernel, listener, "127.0.0.1", 0, None))
    request: asyncio.Task[aiohttp.ClientResponse] | None = None
    try:
        async with aiohttp.ClientSession() as http:

            async def started() -> bool:
                async with http.get(f"{url}/health") as response:
                    return (await response.json())["status"] != "starting"

            await until(started, "the application takes over the socket")
            request = asyncio.create_task(http.get(f"{url}/slow"))
            await asyncio.wait_for(entered.wait(), 60)  # a bound for a hang only
            os.kill(os.getpid(), signal.SIGINT)
            await until(lambda: "stopping:" in caplog.text, "the first Ctrl-C starts the stop")
            assert not serving.done() and exits == []  # it waits for the request
            os.kill(os.getpid(), signal.SIGINT)
            await until(lambda: exits == [130], "the second Ctrl-C ends the process")
            assert "stopping at once (a second signal)" in caplog.text
            release.set()  # (the process would be gone; here the stop goes on and ends)
            async with await request as response:
                assert response.status == 200
        await asyncio.wait_for(serving, 60)  # a bound for a hang only
    finally:
        signal.signal(signal.SIGTERM, before)
        release.set()
        serving.cancel()
        if request is not None:
            request.cancel()


async def test_health_answers_starting_at_once_while_the_embedder_loads(tmp_path, monkeypatch):
    """The built-in model takes seconds to load: meanwhile /health says `starting` (HTTP 503),
    another route asks to retry, and the application proper takes over the same socket."""
    import asyncio
    import contextlib

    import aiohttp

    from passageway.kernel import server
    from passageway.testing.toy_embedder import ToyEmbedder

    release = asyncio.Event()
    original = ToyEmbedder.start

    async def slow_start(self):  # type: ignore[no-untyped-def]
        await release.wait()
        await original(self)

    monkeypatch.setattr(ToyEmbedder, "start", slow_start)
    kernel = make_kernel(write_instance(tmp_path))
    listener = server.bind_socket("127.0.0.1", 0)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    serving = asyncio.create_task(server._serve(kernel, listener, "127.0.0.1", 0, None))
    timeout = aiohttp.ClientTimeout(total=60)  # a bound for a hang only: the answers come at once
    try:
        async with aiohttp.ClientSession(timeout=timeout) as http:
            async with http.get(f"{url}/health") as response:
                assert response.status == 503 and response.headers["Retry-After"] == "2"
                assert (await response.json())["status"] == "starting"
            async with http.post(f"{url}/recall", json={"prompt": "why?"}, headers=AUTH) as response:
                assert response.status == 503
                assert "starting" in (await response.json())["error"]
            release.set()

            async def started() -> bool:
                async with http.get(f"{url}/health") as response:
                    return (await response.json())["status"] != "starting"

            await until(started, "the application takes over the socket")
            async with http.get(f"{url}/health") as response:
                assert response.status == 200
    finally:
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
