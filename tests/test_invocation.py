"""The command that hints name: what runs passageway from the user's shell."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from passageway.kernel import cli
from passageway.kernel.invocation import command, hint


def test_under_uv_run_the_hints_say_uv_run():
    under_uv = {"UV_RUN_RECURSION_DEPTH": "1", "PATH": "/usr/bin"}
    assert command(under_uv, ["/any/passageway"]) == "uv run passageway"
    assert hint("init", {"UV_RUN_RECURSION_DEPTH": "1"}) == "uv run passageway init"


def test_a_program_on_the_path_is_named_by_its_name_and_one_off_the_path_by_its_path(tmp_path):
    folder = tmp_path / "bin"
    folder.mkdir()
    program = folder / "passageway"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    assert command({"PATH": f"{folder}:/usr/bin"}, [str(program)]) == "passageway"
    assert command({"PATH": "/usr/bin"}, [str(program)]) == str(program)
    assert command({"PATH": "/usr/bin"}, ["-c"]) == "passageway"  # python -c / -m: no better name


def test_init_says_next_with_the_command_that_works_here(tmp_path):
    """`uv run passageway init`, as the README has it: the Next steps say `uv run passageway`."""
    environ = {"HOME": str(tmp_path), "PATH": os.environ["PATH"], "UV_RUN_RECURSION_DEPTH": "1"}
    done = subprocess.run([sys.executable, "-m", "passageway.kernel.cli", "init"], env=environ,
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "     uv run passageway" in lines and "     uv run passageway status" in lines
    assert not any(line.strip().startswith("passageway") for line in lines)


def test_an_error_hint_names_the_same_command(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("UV_RUN_RECURSION_DEPTH", "1")
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("PASSAGEWAY_INSTANCE", "PASSAGEWAY_CONFIG", "PASSAGEWAY_LOGIN_PASSWORD",
                 "PASSAGEWAY_LOGIN_PASSWORD_FILE"):
        monkeypatch.delenv(name, raising=False)
    assert cli.main(["search", "--url", "http://127.0.0.1:9", "a question"]) == 2
    assert "run `uv run passageway init`" in capsys.readouterr().err
    assert Path(sys.argv[0]).name != "passageway"  # the rule above is not the process's own name


def test_completion_says_when_the_shell_has_no_passageway(monkeypatch, capsys):
    monkeypatch.setenv("UV_RUN_RECURSION_DEPTH", "1")
    assert cli.main(["completion", "bash"]) == 0
    captured = capsys.readouterr()
    assert "complete" in captured.out
    assert "here it runs as `uv run passageway`" in captured.err
    monkeypatch.delenv("UV_RUN_RECURSION_DEPTH")
    assert cli.main(["completion", "bash"]) == 0
    assert capsys.readouterr().err == ""
