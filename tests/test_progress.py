"""The progress bar: drawn on a terminal (a pseudo-terminal here), never into a pipe."""

from __future__ import annotations

import io
import os
import pty
import select
import signal
import subprocess
import time
from pathlib import Path

from passageway.kernel.progress import ProgressBar, build_progress
from tests.cli_helpers import process_environment, toy_command
from tests.server_helpers import write_instance
from tests.waiting import hold_connector


def test_the_bar_draws_on_a_terminal(tmp_path):
    main, secondary = pty.openpty()
    with os.fdopen(secondary, "w", encoding="utf-8", closefd=True) as terminal:
        bar = ProgressBar(terminal)
        assert bar.enabled
        bar.update("building notes", 30, 120, "items", rate=10.0, eta_seconds=9.0)
        bar.clear()
        written = ""
        while select.select([main], [], [], 0.5)[0]:  # the pty may hand the writes over in pieces
            written += os.read(main, 4096).decode()
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


def test_build_progress_sums_the_passages_of_the_building_sources():
    report = {"sources": {
        "a": {"state": "indexing", "fetched": 0, "of": 50, "ready": 10, "expected": 100, "rate": 2.0,
              "eta_seconds": 45.0},
        "b": {"state": "indexing", "fetched": 0, "of": 20, "ready": 5, "expected": 50, "rate": 1.0,
              "eta_seconds": 45.0},
        "c": {"state": "ok", "items": 7},
    }}
    assert build_progress(report) == ("building a, b", 15, 150, 3.0, 45.0, "passages")
    del report["sources"]["b"]["expected"]  # b has not chunked an item yet: count items
    assert build_progress(report)[1:3] + build_progress(report)[5:] == (0, 70, "items")
    assert build_progress({"sources": {"c": {"state": "ok"}}}) is None


def _run(arguments, environ, stderr_on_terminal, interrupt_after=None, release=None):  # type: ignore[no-untyped-def]
    """Run passageway; returns (exit code, stdout, stderr), stderr through a pty or a pipe.

    ``interrupt_after``: send SIGINT once stderr holds this text (for the server, which runs on).
    ``release``: (text, file): write the file once stderr holds the text (a held connector goes on).
    """
    if not stderr_on_terminal:
        done = subprocess.run(toy_command(arguments), env=environ, capture_output=True, text=True, timeout=60)
        return done.returncode, done.stdout, done.stderr
    main, secondary = pty.openpty()
    process = subprocess.Popen(toy_command(arguments), env=environ, stdout=subprocess.PIPE, stderr=secondary)
    os.close(secondary)
    chunks: list[bytes] = []
    deadline = time.monotonic() + 300  # a wait only: a busy machine can take minutes
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
            if interrupt_after and interrupt_after.encode() in b"".join(chunks):
                process.send_signal(signal.SIGINT)
                interrupt_after = None
            if release and release[0].encode() in b"".join(chunks):
                release[1].write_text("go", encoding="utf-8")
                release = None
        elif process.poll() is not None:
            break
    os.close(main)
    if process.poll() is None:
        process.kill()
    out = process.stdout.read().decode() if process.stdout else ""
    process.wait(timeout=10)
    return process.returncode, out, b"".join(chunks).decode()


def test_search_local_shows_a_bar_while_building_on_a_terminal_only(tmp_path):
    instance = write_instance(tmp_path)
    # The fetch waits until the bar has shown that nothing is fetched yet (not a fixed time).
    hold = hold_connector(Path(instance["PASSAGEWAY_CONFIG"]), "fetch")
    environ = process_environment(instance)
    question = ["search", "--local", "refracting telescope lens"]
    code, out, err = _run(question, environ, stderr_on_terminal=True, release=("0/4 items", hold))
    assert code == 0, err
    assert "Refracting telescope" in out
    assert "building notes [" in err and "0/4 items" in err

    second = tmp_path / "second"
    second.mkdir()
    environ = process_environment(write_instance(second))  # no sleep: nothing to wait for in a pipe
    code, out, err = _run(question, environ, stderr_on_terminal=False)
    assert code == 0, err
    assert err == "passageway: building notes first\n"
    assert "\r" not in err and "[" not in err


def test_a_foreground_first_build_shows_a_bar_on_a_terminal(tmp_path):
    from tests.server_helpers import free_port

    # The fetch outlasts the test (Ctrl-C comes once the bar shows): the bar is drawn while nothing
    # is fetched yet, however slowly a busy machine starts the server.
    environ = process_environment(write_instance(tmp_path, sleep="fetch:120"),
                                  PASSAGEWAY_PORT=str(free_port()))
    code, _, err = _run(["serve"], environ, stderr_on_terminal=True, interrupt_after="building notes [")
    assert code == 0, err
    assert "\r\x1b[Kbuilding notes [" in err and "0/4 items" in err
    assert "listening on http://127.0.0.1:" in err
    # The bar is cleared before a log line: what the terminal shows of that line is the log line.
    for line in err.replace("\r\n", "\n").split("\n"):
        if "INFO passageway" in line:
            shown = line.split("\r")[-1].replace("\x1b[K", "")
            assert shown.startswith("20") and "building notes [" not in shown, repr(line)


def test_eval_shows_a_bar_on_a_terminal_only(tmp_path):
    from tests.test_eval_cli import CASES, write_config

    config = write_config(tmp_path)
    hold = hold_connector(config, "fetch")  # until the bar shows the build
    environ = process_environment({"HOME": str(tmp_path / "home")})
    arguments = ["eval", str(CASES), "--config", str(config)]
    code, out, err = _run(arguments, environ, stderr_on_terminal=True, release=("building notes [", hold))
    assert code == 0, err
    assert "building notes [" in err and "asking [" in err and "questions" in err
    assert "eval: indexing" not in err  # the bar replaces those lines
    assert "| Hit@3" in out
    code, out, err = _run(arguments, environ, stderr_on_terminal=False)
    assert code == 0, err
    assert "\r" not in err and "asking [" not in err


def test_build_progress_counts_windows_once_every_passage_has_its_vector():
    report = {"sources": {
        "a": {"state": "indexing", "fetched": 50, "of": 50, "ready": 100, "expected": 100,
              "windows": 30, "windows_expected": 120, "rate": 2.0, "eta_seconds": 9.0},
    }}
    assert build_progress(report) == ("building a", 30, 120, 2.0, 9.0, "windows")
    report["sources"]["a"]["ready"] = 99  # a passage still waits: the bar counts passages
    assert build_progress(report)[1:3] + build_progress(report)[5:] == (99, 100, "passages")


def test_the_bar_counts_windows_in_the_windows_stage():
    from passageway.kernel.progress import build_progress

    entry = {"state": "indexing", "stage": "windows", "of": 10, "fetched": 10, "ready": 39, "expected": 40,
             "windows": 12, "windows_expected": 50}
    label, done, total, _, _, unit = build_progress({"sources": {"notes": entry}})  # type: ignore[misc]
    assert (label, done, total, unit) == ("building notes", 12, 50, "windows")
