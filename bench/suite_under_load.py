"""The README's test command, several times in a row, with busy processes beside it.

CI may run on a busy machine; a test that only passes on a quiet one blocks every change. This
script starts ``--busy`` processes that each keep a core busy (a Python loop, nothing else), runs
the test command ``--runs`` times one after the other, then stops the busy processes. It prints
one line a run (exit status, wall time, pytest's summary line, the load average) and exits 1 if
any run failed. Each run's whole output goes to ``--log-dir``.

    uv run python bench/suite_under_load.py                  # 3 runs of `uv run pytest -q`, 8 busy
    uv run python bench/suite_under_load.py --runs 1 --busy 0  # the command once on a quiet machine
    uv run python bench/suite_under_load.py --clone            # each run in a fresh clone of HEAD
    uv run python bench/suite_under_load.py --clone --fresh-home --busy 0 --runs 1   # a new machine

With ``--clone`` each run starts from ``git clone`` of the commit HEAD named when the script
started (so every run tests one commit, whatever is committed meanwhile) and ``uv sync
--all-packages --locked``, as ``.ci/run`` does (uncommitted changes are not in it).

With ``--fresh-home`` each run has an empty home folder of its own, as a new machine or a new CI
runner has: the converted model, the npm tools and every other cache of ``~`` are made again, by
several test workers at once (uv's package cache stays where it is, so nothing is downloaded
again). A race between workers filling a cache shows there and nowhere else.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUSY = "while True:\n    pass\n"
SUMMARY = re.compile(r"\d+ (passed|failed|error)")


def start_busy(count: int) -> list[subprocess.Popen[bytes]]:
    """``count`` processes that each spin on a core until stopped."""
    return [subprocess.Popen([sys.executable, "-c", BUSY], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            for _ in range(count)]


def stop_busy(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def head_commit() -> str:
    """The commit HEAD names now: every run tests this one, whatever is committed meanwhile."""
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()


def prepare_clone(folder: Path, commit: str) -> Path:
    """A fresh clone of ``commit`` in ``folder``, synced as ``.ci/run`` syncs it."""
    clone = folder / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "checkout", "--quiet", "--detach", commit], cwd=clone, check=True)
    environ = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    environ.pop("VIRTUAL_ENV", None)
    subprocess.run(["uv", "sync", "--quiet", "--all-packages", "--locked"], cwd=clone, env=environ,
                   check=True)
    return clone


FRESH_HOME_DROPS = ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
                    "PASSAGEWAY_NPM_TOOLS", "PASSAGEWAY_MODEL_DIR")
"""Variables that point at folders outside ``~``: a run with ``--fresh-home`` goes without them."""


def fresh_home_environ(home: Path) -> dict[str, str]:
    """The variables of a run whose home folder is ``home`` (empty), uv's cache kept."""
    cache = subprocess.run(["uv", "cache", "dir"], capture_output=True, text=True, check=True).stdout.strip()
    return {"HOME": str(home), "UV_CACHE_DIR": cache}


def run_once(command: list[str], where: Path, log: Path,
             home: Path | None = None) -> tuple[int, float, str]:
    """Run ``command`` in ``where`` (with ``home`` as its empty home folder, if given); its exit
    status, wall seconds and pytest's summary line."""
    environ = dict(os.environ)
    environ.pop("VIRTUAL_ENV", None)  # `uv run` in a clone uses the clone's environment
    if home is not None:
        for name in FRESH_HOME_DROPS:
            environ.pop(name, None)
        environ.update(fresh_home_environ(home))
    started = time.perf_counter()
    with log.open("wb") as out:
        code = subprocess.run(command, cwd=where, env=environ, stdout=out, stderr=subprocess.STDOUT,
                              check=False).returncode
    seconds = time.perf_counter() - started
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    summary = next((line.strip("= ") for line in reversed(lines) if SUMMARY.search(line)), "no summary line")
    return code, seconds, summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs of the command, one after another (3)")
    parser.add_argument("--busy", type=int, default=8, help="processes that keep a core busy meanwhile (8)")
    parser.add_argument("--command", default="uv run pytest -q",
                        help="the test command (default: the README's, `uv run pytest -q`)")
    parser.add_argument("--clone", action="store_true", help="run each time in a fresh clone of HEAD")
    parser.add_argument("--fresh-home", action="store_true",
                        help="run each time with an empty home folder (every cache of ~ made again)")
    parser.add_argument("--log-dir", type=Path,
                        default=Path(tempfile.gettempdir()) / "passageway-suite-under-load",
                        help="where each run's output goes")
    args = parser.parse_args(argv)

    args.log_dir.mkdir(parents=True, exist_ok=True)
    command = shlex.split(args.command)
    commit = head_commit() if args.clone else ""
    print(f"{args.runs} run(s) of `{args.command}` beside {args.busy} busy process(es) on "
          f"{os.cpu_count()} cores{f' (fresh clones of {commit[:12]})' if args.clone else ''}"
          f"{', each with an empty home folder' if args.fresh_home else ''}; "
          f"logs in {args.log_dir}")
    busy = start_busy(args.busy)
    failed = 0
    try:
        for number in range(1, args.runs + 1):
            with tempfile.TemporaryDirectory(prefix="passageway-suite-") as folder:
                where = prepare_clone(Path(folder), commit) if args.clone else ROOT
                log = args.log_dir / f"run-{number}.log"
                home = None
                if args.fresh_home:
                    home = Path(folder) / "home"
                    home.mkdir()
                code, seconds, summary = run_once(command, where, log, home)
            failed += code != 0
            load = " ".join(f"{value:.1f}" for value in os.getloadavg())
            print(f"run {number}: exit {code}, {seconds / 60:.1f} min, {summary}; load average {load}",
                  flush=True)
    finally:
        stop_busy(busy)
    print(f"{args.runs - failed} of {args.runs} runs passed")
    return 1 if failed else 0


if __name__ == "__main__":
    if shutil.which("uv") is None and "--help" not in sys.argv and "-h" not in sys.argv:
        sys.exit("uv is not on PATH; install it (pip install uv) or pass --command")
    sys.exit(main())
