"""``passageway`` itself: how a word that is no command is answered."""

from __future__ import annotations

from passageway.kernel import cli


def test_an_unknown_command_is_named_and_the_commands_are_listed(capsys):
    assert cli.main(["frobnicate"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.splitlines()
    assert line.startswith("passageway: unknown command 'frobnicate'; the commands are: ")
    _, names = cli.build_parser()
    assert all(name in line for name in names)
    assert "unrecognized arguments" not in captured.err


def test_a_misspelt_command_gets_the_closest_one(capsys):
    assert cli.main(["--instance", "work", "statsu"]) == 2
    assert "unknown command 'statsu'; did you mean `status`? the commands are:" in capsys.readouterr().err


def test_options_without_a_command_still_run_the_server(monkeypatch):
    ran = []
    monkeypatch.setattr("passageway.kernel.commands.serve.run", lambda args: ran.append(args.port) or 0)
    assert cli.main(["--port", "8099"]) == 0
    assert ran == [8099]
