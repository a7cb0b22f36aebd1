"""The environment and the settings built from it and the file (kernel/config.py): folders, instances,
variables, secrets resolved, the password; the file's own rules are in tests/test_config_file.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from passageway.kernel.config import (
    ENVIRONMENT,
    load_password,
    load_settings,
    resolve_secrets,
)
from passageway.kernel.errors import ConfigError
from passageway.kernel.instances import resolve_instance


def test_secrets_resolve_from_the_environment_and_name_only_the_variable():
    resolved = resolve_secrets({"TOKEN": "NOTES_TOKEN"}, {"NOTES_TOKEN": "s3cret"}, "notes")
    assert resolved == {"TOKEN": "s3cret"}
    with pytest.raises(ConfigError, match="NOTES_TOKEN, which is not set"):
        resolve_secrets({"TOKEN": "NOTES_TOKEN"}, {}, "connector 'notes'")


def write_config(home: Path, instance: str | None = None, text: str = "") -> Path:
    folder = home / ".config" / ("passageway" if instance is None else f"passageway-{instance}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "passageway.toml").write_text(text)
    return folder


def test_default_folders_follow_the_platform(tmp_path):
    write_config(tmp_path)
    settings = load_settings({"HOME": str(tmp_path)})
    assert settings.config_path == tmp_path / ".config/passageway/passageway.toml"
    assert settings.data_dir == tmp_path / ".local/share/passageway"
    assert settings.shared_data_dir == settings.data_dir
    assert settings.model_dir is None
    assert (settings.host, settings.port) == ("127.0.0.1", 8082)
    assert (settings.poll_seconds, settings.reconcile_seconds) == (60, 1800)
    assert settings.model_hub == "https://huggingface.co"


def test_an_instance_moves_config_and_data_but_not_the_models(tmp_path):
    write_config(tmp_path, "work")
    settings = load_settings({"HOME": str(tmp_path)}, instance="work")
    assert settings.config_path == tmp_path / ".config/passageway-work/passageway.toml"
    assert settings.data_dir == tmp_path / ".local/share/passageway-work"
    assert settings.shared_data_dir == tmp_path / ".local/share/passageway"
    assert settings.instance == "work"


def test_the_command_line_instance_wins_over_the_environment(tmp_path):
    write_config(tmp_path, "work")
    write_config(tmp_path, "home")
    environ = {"HOME": str(tmp_path), "PASSAGEWAY_INSTANCE": "home"}
    assert resolve_instance("work", environ) == "work"
    assert resolve_instance(None, environ) == "home"


def test_an_unknown_instance_lists_the_existing_ones(tmp_path):
    write_config(tmp_path, "work")
    write_config(tmp_path, "customer")
    with pytest.raises(ConfigError) as caught:
        resolve_instance("wrok", {"HOME": str(tmp_path)})
    assert "customer, work" in str(caught.value) and "passageway --instance wrok init" in str(caught.value)
    assert resolve_instance("wrok", {"HOME": str(tmp_path)}, creating=True) == "wrok"


def test_only_named_instances_means_pick_one(tmp_path):
    write_config(tmp_path, "work")
    with pytest.raises(ConfigError, match="only named instances"):
        resolve_instance(None, {"HOME": str(tmp_path)})


def test_a_missing_config_file_says_how_to_make_one(tmp_path):
    with pytest.raises(ConfigError, match="passageway init"):
        load_settings({"HOME": str(tmp_path)})


def test_environment_variables_override_the_defaults(tmp_path):
    config = tmp_path / "elsewhere.toml"
    config.write_text("[[connector]]\nname = 'a'\ncommand = ['x']\n")
    environ = {
        "HOME": str(tmp_path),
        "PASSAGEWAY_CONFIG": str(config),
        "PASSAGEWAY_DATA_DIR": str(tmp_path / "data"),
        "PASSAGEWAY_MODEL_DIR": str(tmp_path / "model"),
        "PASSAGEWAY_MODEL_HUB": "http://127.0.0.1:9/",
        "PASSAGEWAY_HOST": "0.0.0.0",
        "PASSAGEWAY_PORT": "9000",
        "PASSAGEWAY_POLL_SECONDS": "5",
        "PASSAGEWAY_RECONCILE_SECONDS": "7.5",
        "PASSAGEWAY_BASE_URL": "https://pw.example.org/",
        "PASSAGEWAY_TOOL_DESCRIPTION": "tool text",
        "PASSAGEWAY_INSTRUCTIONS": "instructions",
        "PASSAGEWAY_LOG_LEVEL": "debug",
        "PASSAGEWAY_RANKER": "vector",
        "PASSAGEWAY_STORE": "other",
        "APP_VERSION": "9.9",
    }
    settings = load_settings(environ)
    assert settings.connectors[0].name == "a"
    assert settings.data_dir == tmp_path / "data" and settings.model_dir == tmp_path / "model"
    assert settings.model_hub == "http://127.0.0.1:9"
    assert (settings.host, settings.port) == ("0.0.0.0", 9000)
    assert (settings.poll_seconds, settings.reconcile_seconds) == (5, 7.5)
    assert settings.base_url == "https://pw.example.org"
    assert (settings.tool_description, settings.instructions) == ("tool text", "instructions")
    assert (settings.log_level, settings.ranker, settings.store, settings.app_version) == (
        "DEBUG", "vector", "other", "9.9"
    )


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("PASSAGEWAY_PORT", "http"),
        ("PASSAGEWAY_PORT", "70000"),
        ("PASSAGEWAY_POLL_SECONDS", "0"),
        ("PASSAGEWAY_RECONCILE_SECONDS", "soon"),
        ("PASSAGEWAY_BASE_URL", "pw.example.org"),
        ("PASSAGEWAY_LOG_LEVEL", "loud"),
    ],
)
def test_bad_environment_values_name_the_variable(tmp_path, variable, value):
    write_config(tmp_path)
    with pytest.raises(ConfigError, match=variable):
        load_settings({"HOME": str(tmp_path), variable: value})


def test_every_variable_read_is_in_the_table():
    source = Path(__file__).parents[1].joinpath("kernel", "config.py").read_text()
    import re

    read = set(re.findall(r'"((?:PASSAGEWAY_|APP_)[A-Z_]+)"', source))
    assert read <= set(ENVIRONMENT)


def test_password_from_variable_or_file(tmp_path):
    assert load_password({"PASSAGEWAY_LOGIN_PASSWORD": "pw"}) == "pw"
    path = tmp_path / "password"
    path.write_text("from-file\n")
    assert load_password({"PASSAGEWAY_LOGIN_PASSWORD_FILE": str(path)}) == "from-file"
    assert load_password({}) is None
    with pytest.raises(ConfigError, match="cannot be read"):
        load_password({"PASSAGEWAY_LOGIN_PASSWORD_FILE": str(tmp_path / "missing")})
    path.write_text("  \n")
    with pytest.raises(ConfigError, match="empty"):
        load_password({"PASSAGEWAY_LOGIN_PASSWORD_FILE": str(path)})


def test_a_kernel_without_a_readable_password_file_gets_no_password_not_an_error(tmp_path):
    from passageway.kernel.config import password_or_none

    assert password_or_none({"PASSAGEWAY_LOGIN_PASSWORD_FILE": str(tmp_path / "missing")}) is None
    assert password_or_none({"PASSAGEWAY_LOGIN_PASSWORD": "s3cret"}) == "s3cret"
