"""``passageway search`` against a running server, wall time from the shell: this tree and an
earlier commit side by side, run after run in one sitting.

    uv run python bench/search_start.py [--previous af89460] [--runs 10] [--url URL]

Without ``--url`` it serves the tests' four-item instance with the toy embedder (no model to
load) in a thread of this process, so what is measured is the command's own start and one
question, not the server's recall. The earlier commit's ``passageway``, ``kernel``, ``builtin``,
``testing`` and ``schemas`` are taken out with ``git archive`` into a temporary folder and put first
on ``PYTHONPATH``; both versions run with this environment's interpreter, from a folder outside
the clone, turn by turn. Prints each version's median, fastest and slowest, the ratio of the
medians, and the load average before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "how does a refracting telescope gather starlight with a lens?"


def serve_toy(folder: Path) -> tuple[str, dict[str, str]]:
    """The tests' instance, built, served from a thread; its URL and its environment."""
    sys.path.insert(0, str(ROOT))
    from tests.server_helpers import make_kernel, running_server, wait_built, write_instance

    folder.mkdir()
    environ = write_instance(folder)
    ready: list[str] = []
    started = threading.Event()

    async def run() -> None:
        kernel = make_kernel(environ)
        async with running_server(kernel) as url:
            await wait_built(kernel, timeout=600)
            ready.append(url)
            started.set()
            await asyncio.Event().wait()

    threading.Thread(target=lambda: asyncio.run(run()), daemon=True).start()
    if not started.wait(600):
        raise SystemExit("the toy server did not finish building in 10 minutes")
    return ready[0], environ


def previous_tree(commit: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "passageway", "kernel", "builtin",
                              "testing", "schemas"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def one_run(tree: Path, url: str, environ: dict[str, str], outside: Path) -> float:
    env = {**os.environ, **environ, "PYTHONPATH": str(tree)}
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "passageway.kernel.cli", "search", "--url", url, QUESTION],
                          cwd=outside, env=env, capture_output=True, text=True, timeout=300)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"search in {tree} failed ({done.returncode}): {done.stderr.strip()}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--previous", default="af89460", help="the earlier commit (default af89460)")
    parser.add_argument("--runs", type=int, default=10, help="runs of each version (default 10)")
    parser.add_argument("--url", help="a running server (its password in PASSAGEWAY_LOGIN_PASSWORD)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="passageway-search-start-") as temporary:
        folder = Path(temporary)
        (folder / "previous").mkdir()
        (folder / "outside").mkdir()
        previous = previous_tree(args.previous, folder / "previous")
        if args.url:
            url, environ = args.url, {}
        else:
            url, environ = serve_toy(folder / "instance")
        load_before = os.getloadavg()[0]
        times: dict[str, list[float]] = {"this tree": [], args.previous: []}
        for _ in range(args.runs):
            times[args.previous].append(one_run(previous, url, environ, folder / "outside"))
            times["this tree"].append(one_run(ROOT, url, environ, folder / "outside"))
        load_after = os.getloadavg()[0]
    for name, seconds in times.items():
        print(f"{name}: median {statistics.median(seconds):.2f} s, fastest {min(seconds):.2f} s, "
              f"slowest {max(seconds):.2f} s ({len(seconds)} runs)")
    ratio = statistics.median(times["this tree"]) / statistics.median(times[args.previous])
    print(f"ratio of the medians: {ratio:.2f}; load average {load_before:.1f} before, {load_after:.1f} after")


if __name__ == "__main__":
    main()
