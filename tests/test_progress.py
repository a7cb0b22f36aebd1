"""The progress bar: drawn on a terminal (a pseudo-terminal here), never into a pipe."""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import time

from passageway.kernel.commands.progress import ProgressBar, build_progress
from tests.cli_helpers import process_environment, toy_command
from tests.server_helpers import write_instance


def test_the_bar_draws_on_a_terminal(tmp_path):
    main, secondary = pty.openpty()
    with os.fdopen(secondary, "w", encoding="utf-8", closefd=True) as terminal:
        bar = ProgressBar(terminal)
        assert bar.enabled
        bar.update("building notes", 30, 120, "items", rate=10.0, eta_seconds=9.0)
        bar.clear()
        written = os.read(main, 4096).decode()
    os.close(main)
    assert "\r\x1b[Kbuilding notes [" in written
    assert "#" * 5 in written and "30/120 items  10.0/s  about 9 s left" in written
    assert written.endswith("\r\x1b[K")  # cleared for the next line


def test_the_bar_writes_nothing_into_a_pipe_or_a_file():
    stream = io.StringIO()
    bar = ProgressBar(stream)
    assert not bar.enabled
    bar.update("building", 1, 2)
    bar.clear()
    assert stream.getvalue() == ""
    read, write = os.pipe()
    with os.fdopen(write, "w") as pipe:
        assert not ProgressBar(pipe).enabled
    os.close(read)


def test_build_progress_sums_the_building_sources():
    report = {"sources": {
        "a": {"state": "indexing", "fetched": 10, "of": 100, "rate": 2.0, "eta_seconds": 45.0},
        "b": {"state": "indexing", "fetched": 5, "of": 50, "rate": 1.0, "eta_seconds": 45.0},
        "c": {"state": "ok", "items": 7},
    }}
    assert build_progress(report) == ("building a, b", 15, 150, 3.0, 45.0)
    assert build_progress({"sources": {"c": {"state": "ok"}}}) is None


def _run(arguments, environ, stderr_on_terminal):  # type: ignore[no-untyped-def]
    """Run passageway; returns (exit code, stdout, stderr), stderr through a pty or a pipe."""
    if not stderr_on_terminal:
        done = subprocess.run(toy_command(arguments), env=environ, capture_output=True, text=True, timeout=60)
        return done.returncode, done.stdout, done.stderr
    main, secondary = pty.openpty()
    process = subprocess.Popen(toy_command(arguments), env=environ, stdout=subprocess.PIPE, stderr=secondary)
    os.close(secondary)
    chunks = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the other end closed
                break
            if not chunk:
                break
            chunks.append(chunk)
        elif process.poll() is not None:
            break
    os.close(main)
    out = process.stdout.read().decode() if process.stdout else ""
    process.wait(timeout=10)
    return process.returncode, out, b"".join(chunks).decode()


def test_search_local_shows_a_bar_while_building_on_a_terminal_only(tmp_path):
    environ = process_environment(write_instance(tmp_path, sleep="fetch:1.5"))
    question = ["search", "--local", "refracting telescope lens"]
    code, out, err = _run(question, environ, stderr_on_terminal=True)
    assert code == 0, err
    assert "Refracting telescope" in out
    assert "building notes [" in err and "0/4 items" in err

    environ["PASSAGEWAY_DATA_DIR"] = str(tmp_path / "second")
    code, out, err = _run(question, environ, stderr_on_terminal=False)
    assert code == 0, err
    assert err == "passageway: building notes first\n"
    assert "\r" not in err and "[" not in err
