"""docs/examples/compose.yaml, read the way the server would see it, without a container engine.

The passageway service's environment (over the image's own ENV from the Dockerfile) and the
configuration file it mounts go through the server's own readers: ``load_settings`` and the
postgres store's ``store_settings``. The DSN they yield must name the postgres service with its
user, password and database; the port, the data folder, the configuration path and the indexed
folder must match what the compose file publishes and mounts; the health checks must call what
the server answers.
"""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
import yaml
from passageway_store_postgres.plugin import store_settings

from passageway.kernel.config import load_password, load_settings

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"
COMPOSE = EXAMPLES / "compose.yaml"
VALUES = {"PASSAGEWAY_LOGIN_PASSWORD": "login-secret", "POSTGRES_PASSWORD": "db-secret"}
"""What a user exports before `docker compose up`."""


def interpolate(value: Any, values: dict[str, str]) -> Any:
    """Compose's ``${NAME}``, ``${NAME:-default}`` and ``${NAME:?message}`` with ``values``."""
    if isinstance(value, dict):
        return {key: interpolate(item, values) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, values) for item in value]
    if not isinstance(value, str):
        return value

    def one(match: re.Match[str]) -> str:
        name, operator, rest = match.group(1), match.group(2), match.group(3)
        if name in values:
            return values[name]
        if operator == ":?":
            raise KeyError(f"compose.yaml needs {name}: {rest}")
        return rest or ""

    return re.sub(r"\$\{(\w+)(?:(:[-?])([^}]*))?\}", one, value)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return interpolate(yaml.safe_load(COMPOSE.read_text(encoding="utf-8")), VALUES)


def image_environment() -> dict[str, str]:
    """The ENV of the Dockerfile's last stage (what every container of the image starts with)."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text(encoding="utf-8"))
    last_stage = text.split("\nFROM ")[-1]
    environment = {}
    for line in last_stage.splitlines():
        if line.startswith("ENV "):
            environment.update(pair.split("=", 1) for pair in line[4:].split())
    return environment


def mounts(service: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    """Container path -> (host path or volume name, read-only) of a service's short-form volumes."""
    result = {}
    for entry in service["volumes"]:
        source, target, *mode = entry.split(":")
        result[target] = (source, mode == ["ro"])
    return result


@pytest.fixture(scope="module")
def served(compose):
    """(environment, settings) of the passageway service as the server reads them."""
    service = compose["services"]["passageway"]
    environ = {**image_environment(), **{key: str(value) for key, value in service["environment"].items()}}
    config_source, read_only = mounts(service)[environ["PASSAGEWAY_CONFIG"]]
    assert read_only
    settings = load_settings(environ, config_path=EXAMPLES / config_source)
    return environ, settings


def test_without_the_secrets_compose_refuses_to_start():
    text = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    for name in VALUES:
        with pytest.raises(KeyError, match=name):
            interpolate(text, {key: value for key, value in VALUES.items() if key != name})


def test_the_server_reaches_the_postgres_service_with_its_credentials(compose, served):
    environ, settings = served
    assert settings.store == "postgres"
    dsn, schema, _ = store_settings(settings.file.store, environ)
    address = urllib.parse.urlsplit(dsn)
    database = compose["services"]["postgres"]["environment"]
    assert address.hostname in compose["services"] and address.hostname == "postgres"
    assert (address.port or 5432) == 5432
    assert address.username == database["POSTGRES_USER"]
    assert address.password == database["POSTGRES_PASSWORD"] == VALUES["POSTGRES_PASSWORD"]
    assert address.path.lstrip("/") == database["POSTGRES_DB"]
    assert schema == "passageway"
    assert compose["services"]["passageway"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "pgvector" in compose["services"]["postgres"]["image"]


def test_the_published_port_data_and_password_are_the_servers(compose, served):
    environ, settings = served
    service = compose["services"]["passageway"]
    assert settings.host == "0.0.0.0"
    assert [f"{settings.port}:{settings.port}"] == service["ports"]
    volume, read_only = mounts(service)[str(settings.data_dir)]
    assert volume in compose["volumes"] and not read_only
    assert load_password(environ) == VALUES["PASSAGEWAY_LOGIN_PASSWORD"]


def test_the_indexed_folder_is_mounted_read_only(compose, served):
    _, settings = served
    folders = [connector.env["FOLDER"] for connector in settings.connectors]
    assert folders
    # The image's environment holds the bundled connectors; its python is the one to name.
    assert all(connector.command[0] == "/app/.venv/bin/python" for connector in settings.connectors)
    assert image_environment()["PATH"].startswith("/app/.venv/bin:")
    for folder in folders:
        assert mounts(compose["services"]["passageway"])[folder][1]


def test_an_orchestrator_sees_an_unhealthy_server(compose, served):
    _, settings = served
    check = compose["services"]["passageway"]["healthcheck"]
    command = " ".join(check["test"])
    assert check["test"][0] == "CMD" and f"127.0.0.1:{settings.port}/health" in command
    # urlopen raises on the 503 /health answers when the server is failing: the check exits 1.
    assert "urlopen" in command and check["retries"] >= 1
    assert "pg_isready" in compose["services"]["postgres"]["healthcheck"]["test"]
    assert compose["services"]["passageway"]["stop_grace_period"] == "10s"
