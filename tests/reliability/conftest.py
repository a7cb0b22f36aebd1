"""The reliability suite: real servers and real subprocesses, faults, hostile input, fuzz, load.

``uv run pytest`` runs a reduced form (a few kills, short load, few fuzz examples);
``RELIABILITY_FULL=1 uv run pytest tests/reliability`` runs the full form and then writes its
figures to ``docs/reliability.json`` and the page ``docs/reliability.md`` (``report.py``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.server_helpers import PASSWORD, free_port, write_instance

FULL = os.environ.get("RELIABILITY_FULL") == "1"
ROOT = Path(__file__).resolve().parents[2]
AUTH = {"Authorization": f"Bearer {PASSWORD}"}


def scale(reduced: Any, full: Any) -> Any:
    """The reduced value in the default run, the full one under ``RELIABILITY_FULL=1``."""
    return full if FULL else reduced


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.reliability)


class Figures:
    """What the run measured, by section; written to ``docs/reliability.json`` in the full form."""

    def __init__(self) -> None:
        self.sections: dict[str, dict[str, Any]] = {}

    def add(self, section: str, **values: Any) -> None:
        entry = self.sections.setdefault(section, {})
        for key, value in values.items():
            if isinstance(value, int | float) and not isinstance(value, bool) and key in entry:
                entry[key] += value  # counts from several tests of a section add up
            else:
                entry[key] = value


FIGURES = Figures()
SECTIONS = {"faults", "connectors", "hostile_http", "fuzz", "load", "index_input", "server_limits"}


@pytest.fixture(scope="session")
def figures() -> Figures:
    return FIGURES


CONNECTOR_SECTIONS = {"redirects", "poisoned_batches", "hostile_remote", "quadratic_sdk"}
"""Issue 32's connector families: test_redirect_leaks, test_poisoned_batches, test_hostile_remote
and test_quadratic_sdk (report.py renders them after the others)."""
SECTIONS |= CONNECTOR_SECTIONS
SECTIONS |= {"probe3_slow_bodies", "probe3_prompts", "probe3_index"}  # issue 38: report_probe3.py


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not FULL or set(FIGURES.sections) != SECTIONS:
        return  # only a whole full run rewrites the page
    from tests.reliability import report

    results = {
        "command": "RELIABILITY_FULL=1 uv run pytest tests/reliability",
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "passed": exitstatus == 0,
        "machine": f"{os.cpu_count()} cores, Python {sys.version.split()[0]}",
        "sections": FIGURES.sections,
    }
    report.write(results)


# ---------------------------------------------------------------------------------------------
# A real server process
# ---------------------------------------------------------------------------------------------


class Server:
    """``passageway serve`` (with the toy embedder) as a child process in a session of its own."""

    def __init__(self, folder: Path, environ: dict[str, str]) -> None:
        self.folder = folder
        self.environ = environ
        self.port = int(environ["PASSAGEWAY_PORT"])
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = folder / "server.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.nofile: int | None = None  # RLIMIT_NOFILE for the server process (ulimit -n)

    def start(self, timeout: float = 300.0) -> None:
        log = open(self.log_path, "ab")  # noqa: SIM115 (the child holds it)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.serve_toy"], env=self.environ, cwd=ROOT,
            stdout=log, stderr=log, start_new_session=True, preexec_fn=self._limit if self.nofile else None,
        )
        log.close()
        self.starts += 1
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                code = self.process.returncode
                raise AssertionError(f"the server exited with {code}:\n{self.log()[-3000:]}")
            try:
                if self.health().get("status") != "starting":  # `starting`: the model still loads
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"the server did not answer within {timeout} s:\n{self.log()[-3000:]}")

    def _limit(self) -> None:
        """In the child, before it starts: the descriptor limit a systemd service gets by default."""
        import resource

        assert self.nofile is not None
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, self.nofile))

    def health(self, authorised: bool = True) -> dict[str, Any]:
        request = urllib.request.Request(f"{self.url}/health", headers=AUTH if authorised else {})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return dict(json.loads(response.read()))
        except urllib.error.HTTPError as error:
            return dict(json.loads(error.read()))

    def wait_until(self, predicate: Any, timeout: float = 300.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        report: dict[str, Any] = {}
        while time.monotonic() < deadline:
            report = self.health()
            if predicate(report):
                return report
            time.sleep(0.1)
        raise AssertionError(f"gave up waiting after {timeout} s; last health: {report}")

    def kill9(self) -> None:
        """SIGKILL the server and everything in its session (its connectors, its workers)."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        self.process = None

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        self.process = None

    def rss_kib(self) -> int:
        """The server's resident memory, from ``/proc``."""
        assert self.process is not None
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""

    def assert_clean_log(self) -> None:
        """No traceback and no ERROR line: whatever the suite sent was handled as expected."""
        text = self.log()
        bad = [line for line in text.splitlines() if " ERROR " in line or "Traceback" in line]
        assert not bad, "\n".join(bad[:20]) + "\n---\n" + text[-4000:]


def server_environ(folder: Path, *, items: list[dict[str, Any]] | None = None, **extra: str
                   ) -> dict[str, str]:
    environ = write_instance(folder, items=items)
    environ.update({
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PASSAGEWAY_PORT": str(free_port()),
        "PASSAGEWAY_LOG_LEVEL": "INFO",
        "PASSAGEWAY_INSTANCE": "",
        "PYTHONPATH": str(ROOT),
        **extra,
    })
    return environ


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[Any]:
    """Builds :class:`Server` objects that are always stopped at the end of the test."""
    servers: list[Server] = []

    def make(folder: Path | None = None, **options: Any) -> Server:
        where = folder or tmp_path
        where.mkdir(parents=True, exist_ok=True)
        environ = options.pop("environ", None) or server_environ(where, **options)
        server = Server(where, environ)
        servers.append(server)
        return server

    yield make
    for server in servers:
        if server.process is not None:
            with_pid = server.process.pid
            try:
                server.stop()
            except Exception:
                os.killpg(with_pid, signal.SIGKILL)
