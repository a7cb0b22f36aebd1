"""passageway.toml (kernel/config_file.py): strict parsing of every table, names, secrets as
references, every mistake reported at once with its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from passageway.builtin.embedders.options import CommandOptions, OnnxOptions
from passageway.kernel.config_file import ConnectorSettings, EmbedderSettings, parse_config_text
from passageway.kernel.errors import ConfigError

FULL = """
[embedder]
kind = "command"
command = ["/usr/bin/python3", "/opt/embed.py"]
env = { MODEL = "bge-m3" }
secrets = { API_KEY = "env:EMBED_KEY" }
min_similarity = 0.8
cross_language_offset = 0.04
batch_size = 16
timeout = 30

[embedders.e5]
kind = "onnx"
model = "multilingual-e5-base"
cross_language_offset = 0
device = "cpu"
download = false
model_dir = "~/models/e5"
threads = 2

[[connector]]
name = "notes"
command = ["/usr/bin/python3", "-m", "passageway.testing.fake_connector"]
env = { FAKE_ITEMS = "/tmp/items.json" }
secrets = { TOKEN = "env:NOTES_TOKEN" }
timeout = 30
max_line_bytes = 2048
max_output_bytes = 4096
max_delete_fraction = 0.5

[[connector]]
name = "wiki_2"
command = ["wiki"]
"""


def test_every_key_is_read():
    settings = parse_config_text(FULL)
    notes, wiki = settings.connectors
    assert notes == ConnectorSettings(
        name="notes",
        command=("/usr/bin/python3", "-m", "passageway.testing.fake_connector"),
        env={"FAKE_ITEMS": "/tmp/items.json"},
        secrets={"TOKEN": "NOTES_TOKEN"},
        timeout=30,
        max_line_bytes=2048,
        max_output_bytes=4096,
        max_delete_fraction=0.5,
    )
    assert wiki.timeout == 300 and wiki.max_delete_fraction == 0.3
    assert wiki.max_line_bytes == 4 * 1024 * 1024 and wiki.max_output_bytes == 64 * 1024 * 1024
    assert settings.embedder.kind == "command"
    command = CommandOptions.of(settings.embedder)
    assert command.secrets == {"API_KEY": "EMBED_KEY"}
    assert (command.batch_size, command.timeout) == (16, 30)
    assert settings.embedder.min_similarity == 0.8
    assert settings.embedder.cross_language_offset == 0.04
    e5 = settings.embedders["e5"]
    assert e5.cross_language_offset == 0.0 and isinstance(e5.cross_language_offset, float)
    preset = OnnxOptions.of(e5)
    assert (preset.model, preset.device, preset.download) == ("multilingual-e5-base", "cpu", False)
    assert preset.threads == 2
    assert preset.model_dir == Path("~/models/e5").expanduser()


def test_defaults_without_an_embedder_table():
    settings = parse_config_text("")
    assert settings.embedder == EmbedderSettings()
    assert settings.connectors == ()


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("colour = 1", "'colour' in the top level"),
        ("[embedder]\nmodle = 'x'", "'modle' in [embedder]"),
        ("[embedders.b]\nbatch = 3", "'batch' in [embedders.b]"),
        ("[[connector]]\nname = 'a'\ncommand = ['x']\ntimout = 3", "'timout' in [[connector]] 'a'"),
    ],
)
def test_an_unknown_key_names_the_key_and_the_table(text, named):
    """The kernel's tables fail when read; an embedder table when its kind checks its keys."""
    with pytest.raises(ConfigError, match="unknown key") as caught:
        file = parse_config_text(text)
        for embedder in (file.embedder, *file.embedders.values()):
            OnnxOptions.of(embedder)
    assert named in str(caught.value)


@pytest.mark.parametrize("name", ["Notes", "_x", "-x", "a b", "a.b", "", "ä"])
def test_connector_names_are_checked(name):
    with pytest.raises(ConfigError, match="name"):
        parse_config_text(f"[[connector]]\nname = {name!r}\ncommand = ['x']")


@pytest.mark.parametrize("name", ["notes", "0day", "a_b-c"])
def test_good_connector_names_pass(name):
    assert parse_config_text(f"[[connector]]\nname = {name!r}\ncommand = ['x']").connectors[0].name == name


def test_two_connectors_with_one_name_are_refused():
    text = "[[connector]]\nname = 'a'\ncommand = ['x']\n[[connector]]\nname = 'a'\ncommand = ['y']"
    with pytest.raises(ConfigError, match="both named 'a'"):
        parse_config_text(text)


def test_a_literal_secret_is_refused_without_echoing_it():
    text = "[[connector]]\nname = 'a'\ncommand = ['x']\nsecrets = { TOKEN = 'hunter2-very-secret' }"
    with pytest.raises(ConfigError) as caught:
        parse_config_text(text)
    message = str(caught.value)
    assert "hunter2" not in message
    assert 'env:NAME' in message and 'TOKEN = "env:TOKEN"' in message


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("command = 'python3 x.py'", "list of strings"),
        ("command = []", "list of strings"),
        ("env = { PORT = 8080 }", 'PORT = "8080"'),
        ("env = { PASSAGEWAY_LOGIN_PASSWORD = 'x' }", "reserved"),
        ("timeout = -1", "`timeout`"),
        ("timeout = true", "`timeout`"),
        ("max_line_bytes = 1.5", "whole number"),
        ("max_delete_fraction = 1.5", "`max_delete_fraction`"),
    ],
)
def test_wrong_values_name_the_key(line, fragment):
    command = "" if line.startswith("command") else "command = ['x']\n"
    with pytest.raises(ConfigError) as caught:
        parse_config_text(f"[[connector]]\nname = 'a'\n{command}{line}")
    assert fragment in str(caught.value)


@pytest.mark.parametrize(
    ("table", "fragment"),
    [
        ("kind = 'command'", "needs `command`"),
        ("device = 'gpu'", "`device`"),
        ("download = 'no'", "`download`"),
        ("kind = 'command'\ncommand = ['x']\nbatch_size = 2000", "`batch_size`"),
        ("batch_size = 16", "unknown key 'batch_size' in [embedder]"),
        ("min_similarity = 1.2", "`min_similarity`"),
        ("cross_language_offset = 1.5", "`cross_language_offset` is a number from 0 to 1, got 1.5"),
        ("cross_language_offset = -0.01", "`cross_language_offset` is a number from 0 to 1"),
        ("cross_language_offset = '0.06'", "`cross_language_offset` is a number from 0 to 1, got '0.06'"),
        ("cross_language_offset = true", "`cross_language_offset`"),
        ("cross_language_offset = nan", "`cross_language_offset`"),
        ("threads = 0", "`threads`"),
    ],
)
def test_embedder_values_are_checked(table, fragment):
    """The kernel checks the gate numbers when it reads the file; the kind checks its own keys."""
    with pytest.raises(ConfigError) as caught:
        embedder = parse_config_text(f"[embedder]\n{table}").embedder
        options = CommandOptions if embedder.kind == "command" else OnnxOptions
        options.of(embedder)
    assert fragment in str(caught.value)


def test_a_plugin_kind_keeps_keys_of_its_own_and_a_builtin_kind_names_an_unknown_one():
    file = parse_config_text(
        "[embedder]\nkind = 'remote'\nendpoint = 'https://example.org'\nmin_similarity = 0.7\n"
        "[embedders.e5]\nmodle = 'multilingual-e5-base'\n", "my.toml"
    )
    assert file.embedder.options == {"endpoint": "https://example.org"}
    assert file.embedder.min_similarity == 0.7
    with pytest.raises(ConfigError, match=r"my\.toml: unknown key 'modle' in \[embedders\.e5\]"):
        OnnxOptions.of(file.embedders["e5"])


def test_embedders_default_is_reserved():
    with pytest.raises(ConfigError, match="reserved"):
        parse_config_text("[embedders.default]\nkind = 'onnx'")


def test_invalid_toml_names_the_file():
    with pytest.raises(ConfigError, match=r"my\.toml is not valid TOML"):
        parse_config_text("[[connector", "my.toml")


def test_cross_language_offset_is_unset_unless_written():
    assert parse_config_text("").embedder.cross_language_offset is None
    written = parse_config_text("[embedder]\ncross_language_offset = 0.06")
    assert written.embedder.cross_language_offset == 0.06


def test_every_env_reference_in_a_table_is_found_for_the_log_mask():
    from passageway.kernel.tables import referenced_variables

    table = {"secrets": {"API_KEY": "env:EMBED_KEY"}, "nested": [{"token": "env:OTHER"}], "model": "env"}
    assert referenced_variables(table) == ["EMBED_KEY", "OTHER"]


THREE_MISTAKES = """\
[[connector]]
name = "notes"
comand = ["/usr/bin/python3", "-m", "passageway_connector_markdown"]
env = { FOLDER = "/srv/notes" }

[[connector]]
name = "wiki"
command = ["/usr/bin/python3", "-m", "passageway_connector_wikipedia"]
timeout = -5

[embedder]
gate = "sloppy"
"""


def test_every_mistake_of_a_file_is_reported_at_once_with_its_line():
    with pytest.raises(ConfigError) as caught:
        parse_config_text(THREE_MISTAKES, "my.toml")
    problems = caught.value.problems
    assert len(problems) == 4, problems  # the unknown key, the then missing command, timeout, gate
    assert problems[0].startswith("my.toml:3: unknown key 'comand' in [[connector]] 'notes'")
    # The typo leaves no `command`: said as missing, not as a value of the wrong shape.
    assert problems[1].startswith("my.toml:1: [[connector]] 'notes': `command` is required: the program")
    assert problems[2].startswith("my.toml:9: [[connector]] 'wiki': `timeout` is a number from 0.1")
    assert problems[3].startswith("my.toml:11: [embedder]")
    message = str(caught.value).splitlines()
    assert message[0] == "my.toml has 4 mistakes; fix them all, then start again:"
    assert message[1:] == [f"  {problem}" for problem in problems]


def test_one_mistake_is_one_line_with_its_line_number():
    with pytest.raises(ConfigError) as caught:
        parse_config_text('[[connector]]\nname = "a"\ncommand = ["x"]\n\n[[connector]]\nname = "a"\n'
                          'command = ["y"]\n', "my.toml")
    assert str(caught.value).startswith("my.toml:6: connectors 1 and 2 are both named 'a'")
    assert caught.value.problems == [str(caught.value)]


def test_the_line_of_a_key_or_table_is_found_in_the_text():
    from passageway.kernel.config_problems import line_of

    assert line_of(THREE_MISTAKES, "connector", 2, "timeout") == 9
    assert line_of(THREE_MISTAKES, "connector", 2, "secrets") == 6  # not written: the table's header
    assert line_of(THREE_MISTAKES, "embedder", 1, "gate") == 12
    assert line_of(THREE_MISTAKES, "store") is None
    assert line_of('title = "x"\n[store]\n', None, 1, "title") == 1
