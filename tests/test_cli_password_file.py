"""The password file `passageway init` wrote, when it is empty: the commands name that file, not a
variable the user never set, and say how to get a new password."""

from __future__ import annotations

import pytest

from passageway.kernel import cli
from passageway.kernel.commands.instance import password_file
from tests.cli_helpers import use_environment
from tests.server_helpers import write_instance


@pytest.mark.parametrize("command", [["search", "--url", "http://127.0.0.1:9", "a question"], ["serve"]])
def test_an_empty_password_file_from_init_is_named_with_the_fix(tmp_path, monkeypatch, capsys, command):
    monkeypatch.delenv("UV_RUN_RECURSION_DEPTH", raising=False)  # hints name `passageway`
    environ = write_instance(tmp_path)
    environ.pop("PASSAGEWAY_LOGIN_PASSWORD", None)
    environ.pop("PASSAGEWAY_LOGIN_PASSWORD_FILE", None)
    use_environment(monkeypatch, environ)
    path = password_file(environ, None)
    path.parent.mkdir(parents=True)
    path.write_text("\n", encoding="utf-8")  # emptied by hand, or a full disk when init wrote it
    assert cli.main(command) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        f"passageway: the password file {path} is empty; delete it and run `passageway init`, "
        "which writes a new one\n"
    )
    assert "PASSAGEWAY_LOGIN_PASSWORD_FILE" not in captured.err  # the user set no such variable
