"""The Claude Code plugin: its manifests, ``claude plugin validate --strict`` and the service writer.

The validator comes from the npm package ``@anthropic-ai/claude-code`` at a pinned version,
installed once into the same project-local cache folder as the other npm tools
(``tests/test_mcp_npm.py``); it validates offline. Skipped, saying why, without node and npm.
"""

from __future__ import annotations

import json
import plistlib
import struct
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.test_mcp_npm import _install, _run

ROOT = Path(__file__).resolve().parents[1]
CLAUDE_CODE = "@anthropic-ai/claude-code@2.1.332"
SKILLS = {
    "passageway", "passageway-install", "passageway-connect", "passageway-add-source",
    "passageway-status", "passageway-evaluate", "create-passageway-connector",
}
WRITE_SERVICE = ROOT / "skills" / "passageway-install" / "write_service.py"


def manifest(name: str) -> dict:  # type: ignore[type-arg]
    return json.loads((ROOT / ".claude-plugin" / name).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_the_marketplace_lists_this_repository_as_the_plugin():
    plugin, market = manifest("plugin.json"), manifest("marketplace.json")
    assert plugin["name"] == market["name"] == "passageway"
    [entry] = market["plugins"]
    assert entry["name"] == plugin["name"]
    assert entry["source"] == "./"


def test_the_plugin_version_is_the_package_version():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert manifest("plugin.json")["version"] == project["version"]
    assert manifest("plugin.json")["license"] == project["license"]


def test_the_icon_is_a_square_png_the_directory_accepts():
    data = (ROOT / ".claude-plugin" / "icon.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width == height and 512 <= width <= 2048


def test_the_hook_is_the_plugins_hooks_file():
    hooks = json.loads((ROOT / "hooks" / "hooks.json").read_text(encoding="utf-8"))
    [entry] = hooks["hooks"]["UserPromptSubmit"]
    assert entry["hooks"][0]["command"] == 'bash "${CLAUDE_PLUGIN_ROOT}/hooks/recall-hook.sh"'
    assert (ROOT / "hooks" / "recall-hook.sh").is_file()


@pytest.mark.npm
@pytest.mark.parametrize("target", [".", ".claude-plugin/plugin.json"])
async def test_claude_plugin_validate_passes_without_a_warning(target, tmp_path):
    folder = await _install(CLAUDE_CODE)
    claude = folder / "node_modules" / ".bin" / "claude"
    code, output = await _run(
        "env", f"HOME={tmp_path}", f"CLAUDE_CONFIG_DIR={tmp_path / '.claude'}", "DISABLE_AUTOUPDATER=1",
        str(claude), "plugin", "validate", "--strict", "--json", target, cwd=ROOT, timeout=120,
    )
    assert code == 0, output
    report = json.loads(output[output.index("{"):])
    assert report["success"] is True
    assert report["manifest"]["errors"] == [] and report["manifest"]["warnings"] == []
    assert report["directory"]["findings"] == [], report["directory"]["findings"]
    assert report["advice"] == [], report["advice"]
    assert {name.split(":", 1)[1] for name in report["provides"]["skills"]} == SKILLS
    assert [hook["event"] for hook in report["provides"]["hooks"]] == ["UserPromptSubmit"]


def test_every_skill_folder_is_one_of_the_seven():
    assert {path.parent.name for path in (ROOT / "skills").glob("*/SKILL.md")} == SKILLS


# ---------------------------------------------------------------------------------------------
# The install skill's service writer
# ---------------------------------------------------------------------------------------------


def write_service(home: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(WRITE_SERVICE), "--passageway", "/opt/tools/bin/passageway", *arguments],
        capture_output=True, text=True, timeout=60, env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
    )


def test_the_systemd_unit_names_the_password_file_and_the_env_file(tmp_path):
    done = write_service(tmp_path, "--kind", "systemd")
    assert done.returncode == 0, done.stderr
    unit = (tmp_path / ".config" / "systemd" / "user" / "passageway.service").read_text()
    assert "Environment=PASSAGEWAY_LOGIN_PASSWORD_FILE=%h/.config/passageway/password" in unit
    assert "EnvironmentFile=-%h/.config/passageway/env" in unit
    assert "ExecStart=/opt/tools/bin/passageway" in unit
    assert "systemctl --user daemon-reload && systemctl --user enable --now passageway" in done.stdout


def test_an_instance_gets_its_own_unit_port_and_folder(tmp_path):
    done = write_service(tmp_path, "--kind", "systemd", "--instance", "work", "--port", "8083")
    assert done.returncode == 0, done.stderr
    unit = (tmp_path / ".config" / "systemd" / "user" / "passageway-work.service").read_text()
    assert "Environment=PASSAGEWAY_INSTANCE=work" in unit
    assert "Environment=PASSAGEWAY_PORT=8083" in unit
    assert "%h/.config/passageway-work/password" in unit


def test_the_launchd_agent_reads_secrets_through_the_wrapper_only(tmp_path):
    done = write_service(tmp_path, "--kind", "launchd")
    assert done.returncode == 0, done.stderr
    plist = plistlib.loads((tmp_path / "Library" / "LaunchAgents" / "local.passageway.plist").read_bytes())
    wrapper = tmp_path / ".config" / "passageway" / "run-server.sh"
    assert plist["ProgramArguments"] == ["/bin/sh", str(wrapper)]
    assert plist["EnvironmentVariables"]["PASSAGEWAY_LOGIN_PASSWORD_FILE"] == str(
        tmp_path / ".config" / "passageway" / "password")
    assert plist["KeepAlive"] is True and plist["RunAtLoad"] is True
    # The wrapper exports the env file's lines and becomes the server.
    (tmp_path / ".config" / "passageway" / "env").write_text("SOURCE_TOKEN=from-the-env-file\n")
    script = wrapper.read_text().replace("exec /opt/tools/bin/passageway", 'echo "$SOURCE_TOKEN"')
    shown = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, timeout=30)
    assert shown.stdout.strip() == "from-the-env-file"


def test_the_service_writer_wants_a_full_path(tmp_path):
    done = subprocess.run([sys.executable, str(WRITE_SERVICE), "--passageway", "passageway"],
                          capture_output=True, text=True, timeout=60, env={"HOME": str(tmp_path)})
    assert done.returncode == 2
    assert "--passageway must be a full path" in done.stderr


@pytest.mark.npm
async def test_the_connect_skills_registration_reaches_a_live_server(tmp_path):
    """The connect skill's `claude mcp add` and `claude mcp list`, run by the pinned Claude Code
    against a live server: the registration is written and `list` reports it connected."""
    import re

    from tests.server_helpers import PASSWORD, make_kernel, running_server, wait_built, write_instance

    folder = await _install(CLAUDE_CODE)
    claude = str(folder / "node_modules" / ".bin" / "claude")
    skill = (ROOT / "skills" / "passageway-connect" / "SKILL.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```\n(.*?)```", skill, flags=re.DOTALL) if "claude mcp add" in b)
    password_file = tmp_path / "home" / ".config" / "passageway" / "password"
    password_file.parent.mkdir(parents=True)
    password_file.write_text(PASSWORD + "\n")
    (tmp_path / "server").mkdir()
    kernel = make_kernel(write_instance(tmp_path / "server"))
    async with running_server(kernel) as url:
        await wait_built(kernel)
        script = block.replace("http://127.0.0.1:8082", url).replace("claude mcp", f"{claude} mcp")
        code, output = await _run(
            "env", f"HOME={tmp_path / 'home'}", f"CLAUDE_CONFIG_DIR={tmp_path / 'claude'}",
            "DISABLE_AUTOUPDATER=1", "bash", "-c", script, cwd=tmp_path, timeout=120,
        )
    assert code == 0, output
    assert "registered" in output, output
    assert PASSWORD not in output
    assert re.search(r"passageway: .*Connected", output), output
