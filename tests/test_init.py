"""``passageway init``: the folder, a private generated password, a commented config, next steps."""

from __future__ import annotations

import os
import stat

from passageway.kernel import cli
from passageway.kernel.config import load_password, load_settings, parse_config_text


def test_init_creates_the_folder_password_and_config(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("PASSAGEWAY_INSTANCE", "PASSAGEWAY_CONFIG", "PASSAGEWAY_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    assert cli.main(["init"]) == 0
    folder = tmp_path / ".config" / "passageway"
    password_file = folder / "password"
    assert stat.S_IMODE(os.stat(password_file).st_mode) == 0o600
    password = password_file.read_text().strip()
    assert len(password) >= 32
    settings = parse_config_text((folder / "passageway.toml").read_text())
    assert settings.connectors == ()
    out = capsys.readouterr().out
    assert "passageway.toml" in out
    assert f"PASSAGEWAY_LOGIN_PASSWORD_FILE={password_file} passageway" in out
    assert password not in out  # the password is never printed
    assert load_password({"PASSAGEWAY_LOGIN_PASSWORD_FILE": str(password_file)}) == password
    assert load_settings({"HOME": str(tmp_path)}).config_path == folder / "passageway.toml"


def test_init_keeps_what_exists(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("PASSAGEWAY_INSTANCE", raising=False)
    assert cli.main(["init"]) == 0
    folder = tmp_path / ".config" / "passageway"
    password = (folder / "password").read_text()
    (folder / "passageway.toml").write_text('[[connector]]\nname = "mine"\ncommand = ["x"]\n')
    assert cli.main(["init"]) == 0
    assert (folder / "password").read_text() == password
    assert "mine" in (folder / "passageway.toml").read_text()
    assert "kept the existing" in capsys.readouterr().out


def test_init_creates_a_named_instance(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("PASSAGEWAY_INSTANCE", raising=False)
    assert cli.main(["init", "--instance", "work"]) == 0
    folder = tmp_path / ".config" / "passageway-work"
    assert (folder / "password").is_file()
    assert (folder / "passageway.toml").is_file()
    assert "passageway --instance work" in capsys.readouterr().out
    assert load_settings({"HOME": str(tmp_path)}, instance="work").instance == "work"
    other = load_settings({"HOME": str(tmp_path), "PASSAGEWAY_INSTANCE": "work"})
    assert other.data_dir.name == "passageway-work"


def test_init_refuses_a_bad_instance_name(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cli.main(["--instance", "Bad Name", "init"]) == 2
    assert "instance name" in capsys.readouterr().err
    assert not (tmp_path / ".config").exists()


def test_the_templates_embedder_example_parses_when_uncommented():
    from passageway.kernel.commands.init import TEMPLATE

    start = TEMPLATE.index("# [embedder]")
    uncommented = "\n".join(line.removeprefix("# ") for line in TEMPLATE[start:].splitlines())
    embedder = parse_config_text(uncommented).embedder
    assert embedder.min_similarity is not None
    assert embedder.cross_language_offset == 0.06
