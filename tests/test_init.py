"""``passageway init``: the folder, a private generated password, a commented config, next steps."""

from __future__ import annotations

import os
import stat

from passageway.kernel import cli
from passageway.kernel.config import load_password, load_settings, parse_config_text


def test_init_creates_the_folder_password_and_config(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("UV_RUN_RECURSION_DEPTH", raising=False)  # hints name `passageway`
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
    assert f"Start the server (it reads the password from {password_file}):\n     passageway\n" in out
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
    monkeypatch.delenv("UV_RUN_RECURSION_DEPTH", raising=False)  # hints name `passageway`
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("PASSAGEWAY_INSTANCE", raising=False)
    assert cli.main(["init", "--instance", "work"]) == 0
    folder = tmp_path / ".config" / "passageway-work"
    assert (folder / "password").is_file()
    assert (folder / "passageway.toml").is_file()
    assert "     passageway --instance work\n" in capsys.readouterr().out
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


def test_init_folder_writes_a_markdown_source_with_this_interpreter(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("UV_RUN_RECURSION_DEPTH", raising=False)  # hints name `passageway`
    import sys

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("PASSAGEWAY_INSTANCE", raising=False)
    notes = tmp_path / "My Notes"
    notes.mkdir()
    assert cli.main(["init", "--folder", str(notes)]) == 0
    config = tmp_path / ".config" / "passageway" / "passageway.toml"
    (source,) = parse_config_text(config.read_text()).connectors
    assert source.name == "my-notes"
    assert source.command == (sys.executable, "-m", "passageway_connector_markdown")
    assert dict(source.env) == {"FOLDER": str(notes)}
    out = capsys.readouterr().out
    assert f"wrote {config} with a source for the markdown files under {notes}\n" in out
    assert "     passageway\n" in out  # the next step is the bare command: it finds the password file


def test_init_folder_adds_to_an_existing_config_once(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("PASSAGEWAY_INSTANCE", raising=False)
    for name in ("PASSAGEWAY_CONFIG", "PASSAGEWAY_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    assert cli.main(["init"]) == 0
    wiki = tmp_path / "wiki"
    wiki.mkdir()
    capsys.readouterr()
    assert cli.main(["init", "--folder", str(wiki)]) == 0
    config = tmp_path / ".config" / "passageway" / "passageway.toml"
    assert [source.name for source in parse_config_text(config.read_text()).connectors] == ["wiki"]
    out = capsys.readouterr().out
    # Not "kept the existing passageway.toml" and then "wrote" it: it was added to.
    assert f"added a source for the markdown files under {wiki} to {config}\n" in out
    assert f"kept the existing {config}" not in out
    # The README's command run a second time: the folder is there already, which is no mistake.
    before = config.read_text()
    assert cli.main(["init", "--folder", str(wiki)]) == 0
    assert f"{config} already has the source 'wiki' for {wiki}; nothing to add\n" in capsys.readouterr().out
    assert config.read_text() == before
    # Another folder of the same name is a clash, said with the folder the name already stands for.
    other = tmp_path / "other" / "wiki"
    other.mkdir(parents=True)
    assert cli.main(["init", "--folder", str(other)]) == 2
    assert capsys.readouterr().err == (
        f"passageway: {config} already has a source named 'wiki' (for {wiki}); add the folder's "
        "[[connector]] by hand with another name\n"
    )


def test_init_refuses_a_folder_that_is_not_there(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cli.main(["init", "--folder", "no-such-folder"]) == 2
    assert capsys.readouterr().err == (
        "passageway: --folder no-such-folder: there is no such folder; name a folder of markdown files\n"
    )
    assert not (tmp_path / ".config").exists()


def test_init_json(tmp_path, monkeypatch, capsys):
    import json

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("PASSAGEWAY_INSTANCE", raising=False)
    assert cli.main(["init", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    folder = tmp_path / ".config" / "passageway"
    assert report["written"] == [str(folder / "password"), str(folder / "passageway.toml")]
    assert report["kept"] == [] and report["instance"] is None


def test_init_folder_beside_a_running_server_says_to_restart_it(tmp_path, monkeypatch, capsys):
    from passageway.kernel.commands.server_lock import hold

    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("PASSAGEWAY_INSTANCE", "PASSAGEWAY_CONFIG", "PASSAGEWAY_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    notes = tmp_path / "notes"
    notes.mkdir()
    assert cli.main(["init"]) == 0
    capsys.readouterr()
    with hold(tmp_path / ".local" / "share" / "passageway"):  # `passageway serve` is running
        assert cli.main(["init", "--folder", str(notes)]) == 0
        out = capsys.readouterr().out
        assert "Restart the server that is running on this instance" in out
        assert f"indexes {notes} only once restarted" in out
        assert "Start the server" not in out
        assert cli.main(["init", "--folder", str(tmp_path / "other"), "--json"]) == 2
    capsys.readouterr()


def test_init_folder_naming_a_file_says_it_is_a_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("PASSAGEWAY_INSTANCE", raising=False)
    note = tmp_path / "note.md"
    note.write_text("# A note\n")
    assert cli.main(["init", "--folder", str(note)]) == 2
    err = capsys.readouterr().err
    assert err == (f"passageway: --folder {note}: is a file, not a folder; name the folder that holds "
                   "the markdown files (its parent, perhaps)\n")


def test_init_folder_without_markdown_files_says_the_source_stays_empty(tmp_path, monkeypatch, capsys):
    """A folder of .txt notes became a source of 0 items, `ok` in status, with no word why."""
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("PASSAGEWAY_INSTANCE", "PASSAGEWAY_CONFIG", "PASSAGEWAY_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    notes = tmp_path / "notes"
    (notes / "deep").mkdir(parents=True)
    (notes / "todo.txt").write_text("buy milk\n")
    assert cli.main(["init", "--folder", str(notes)]) == 0
    note = (f"note: {notes} holds no .md or .markdown file; the markdown connector reads only those, "
            "so the source stays empty until it does\n")
    assert note in capsys.readouterr().out
    (notes / "deep" / "plan.md").write_text("# Plan\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.markdown").write_text("# A\n")
    assert cli.main(["init", "--folder", str(other)]) == 0
    assert "note:" not in capsys.readouterr().out
