"""The Claude Code plugin: its manifests, ``claude plugin validate --strict``, what an install
copies, and the service writer.

The plugin is the folder ``hooks/`` (manifest, skills, hook); the repository's
``.claude-plugin/marketplace.json`` points at it. The ``claude`` CLI comes from the npm package
``@anthropic-ai/claude-code`` at a pinned version, installed once into the same project-local cache
folder as the other npm tools (``tests/test_mcp_npm.py``); it validates and installs offline.
That version declares Node >= 22; on Node 20 npm warns (EBADENGINE) and installs it anyway, and it
runs, the package being a native program. Skipped, saying why, without node and npm.
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
PLUGIN = ROOT / "hooks"
CLAUDE_CODE = "@anthropic-ai/claude-code@2.1.332"
SKILLS = {
    "passageway", "passageway-install", "passageway-connect", "passageway-add-source",
    "passageway-status", "passageway-evaluate", "create-passageway-connector",
}
WRITE_SERVICE = PLUGIN / "skills" / "passageway-install" / "write_service.py"


def manifest(name: str) -> dict:  # type: ignore[type-arg]
    folder = ROOT if name == "marketplace.json" else PLUGIN
    return json.loads((folder / ".claude-plugin" / name).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_the_marketplace_lists_the_plugin_folder_not_the_repository():
    plugin, market = manifest("plugin.json"), manifest("marketplace.json")
    assert plugin["name"] == market["name"] == "passageway"
    [entry] = market["plugins"]
    assert entry["name"] == plugin["name"]
    assert entry["source"] == "./hooks"


def test_the_plugin_folder_holds_the_manifest_the_skills_and_the_hook_only():
    names = sorted(path.name for path in PLUGIN.iterdir() if path.name != "__pycache__")
    assert names == [".claude-plugin", "hooks.json", "recall-hook.sh", "skills", "test-recall-hook.sh"]


def test_the_plugin_version_is_the_package_version():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert manifest("plugin.json")["version"] == project["version"]
    assert manifest("plugin.json")["license"] == project["license"]


def test_the_icon_is_a_square_png_the_directory_accepts():
    data = (PLUGIN / ".claude-plugin" / "icon.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width == height and 512 <= width <= 2048


def test_the_hook_is_the_plugins_hooks_file():
    assert manifest("plugin.json")["hooks"] == "./hooks.json"
    hooks = json.loads((PLUGIN / "hooks.json").read_text(encoding="utf-8"))
    [entry] = hooks["hooks"]["UserPromptSubmit"]
    assert entry["hooks"][0]["command"] == 'bash "${CLAUDE_PLUGIN_ROOT}/recall-hook.sh"'
    assert (PLUGIN / "recall-hook.sh").is_file()


async def claude(home: Path, *arguments: str, cwd: Path = ROOT) -> tuple[int, str]:
    """The pinned ``claude`` CLI with ``home`` as its HOME and configuration folder."""
    folder = await _install(CLAUDE_CODE)
    program = folder / "node_modules" / ".bin" / "claude"
    return await _run(
        "env", f"HOME={home}", f"CLAUDE_CONFIG_DIR={home / '.claude'}", "DISABLE_AUTOUPDATER=1",
        str(program), *arguments, cwd=cwd, timeout=300,
    )


@pytest.mark.npm
async def test_claude_plugin_validate_accepts_the_marketplace(tmp_path):
    code, output = await claude(tmp_path, "plugin", "validate", "--strict", "--json", ".")
    assert code == 0, output
    report = json.loads(output[output.index("{"):])
    assert report["success"] is True and report["manifest"]["type"] == "marketplace"
    assert report["manifest"]["errors"] == [] and report["manifest"]["warnings"] == []


@pytest.mark.npm
@pytest.mark.parametrize("target", ["hooks", "hooks/.claude-plugin/plugin.json"])
async def test_claude_plugin_validate_passes_without_a_warning(target, tmp_path):
    code, output = await claude(tmp_path, "plugin", "validate", "--strict", "--json", target)
    assert code == 0, output
    report = json.loads(output[output.index("{"):])
    assert report["success"] is True
    assert report["manifest"]["errors"] == [] and report["manifest"]["warnings"] == []
    assert report["directory"]["findings"] == [], report["directory"]["findings"]
    assert report["advice"] == [], report["advice"]
    assert {name.split(":", 1)[1] for name in report["provides"]["skills"]} == SKILLS
    assert [hook["event"] for hook in report["provides"]["hooks"]] == ["UserPromptSubmit"]


def test_every_skill_folder_is_one_of_the_seven():
    assert {path.parent.name for path in (PLUGIN / "skills").glob("*/SKILL.md")} == SKILLS


def files_of(folder: Path) -> dict[str, int]:
    """Each file under ``folder`` (relative path) and its size, without Python's caches."""
    return {path.relative_to(folder).as_posix(): path.stat().st_size for path in folder.rglob("*")
            if path.is_file() and "__pycache__" not in path.parts}


@pytest.mark.npm
async def test_installing_the_plugin_copies_the_plugin_folder_only(tmp_path):
    """``claude plugin marketplace add <clone>`` then ``claude plugin install passageway@passageway``
    into a fresh HOME: the copy is the plugin folder, file for file, and nothing of the checkout
    (no ``.venv``, no ``.demo/password``, no index, no corpus)."""
    home = tmp_path / "home"
    home.mkdir()
    code, output = await claude(home, "plugin", "marketplace", "add", str(ROOT), cwd=tmp_path)
    assert code == 0, output
    code, output = await claude(home, "plugin", "install", "passageway@passageway", cwd=tmp_path)
    assert code == 0, output
    record = home / ".claude" / "plugins" / "installed_plugins.json"
    installed = json.loads(record.read_text(encoding="utf-8"))
    [entry] = installed["plugins"]["passageway@passageway"]
    copy = Path(entry["installPath"])
    copied = files_of(copy)
    assert sorted(copied) == sorted(files_of(PLUGIN))
    assert sum(copied.values()) < 500_000, f"{sum(copied.values())} bytes copied"
    for name in copied:
        assert not name.startswith((".venv/", ".demo/", "corpus/", "docs/")), name
        assert not name.endswith(("password", ".sqlite", ".sqlite3", ".usearch", ".db")), name
    # The finder the skills start with leads from the installed copy back to this repository.
    found = subprocess.run(
        [sys.executable, str(copy / "skills" / "passageway" / "repository.py")],
        capture_output=True, text=True, timeout=60,
        env={"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"), "PATH": "/usr/bin:/bin"},
    )
    assert found.returncode == 0, found.stderr
    assert Path(found.stdout.strip()) == ROOT.resolve()


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
    skill = (PLUGIN / "skills" / "passageway-connect" / "SKILL.md").read_text(encoding="utf-8")
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


# ---------------------------------------------------------------------------------------------
# The skills' repository finder
# ---------------------------------------------------------------------------------------------

FINDER = PLUGIN / "skills" / "passageway" / "repository.py"


def find_repository(
    config_dir: Path, marketplaces: dict[str, object] | None
) -> subprocess.CompletedProcess[str]:
    if marketplaces is not None:
        (config_dir / "plugins").mkdir(parents=True)
        (config_dir / "plugins" / "known_marketplaces.json").write_text(json.dumps(marketplaces))
    return subprocess.run([sys.executable, str(FINDER)], capture_output=True, text=True, timeout=60,
                          env={"HOME": str(config_dir), "CLAUDE_CONFIG_DIR": str(config_dir)})


def test_the_finder_prints_the_marketplace_that_is_a_passageway_repository(tmp_path):
    other = tmp_path / "other"
    (other / ".claude-plugin").mkdir(parents=True)
    (other / ".claude-plugin" / "marketplace.json").write_text('{"plugins": [{"name": "else"}]}')
    done = find_repository(tmp_path / "claude", {
        "another": {"installLocation": str(other)},
        "broken": "not an entry",
        "mine": {"source": {"source": "directory", "path": str(ROOT)}, "installLocation": str(ROOT)},
    })
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == ROOT.resolve()


@pytest.mark.parametrize("marketplaces", [None, {}, {"x": {"installLocation": "/nowhere"}}])
def test_without_the_repository_the_finder_says_what_to_do(marketplaces, tmp_path):
    done = find_repository(tmp_path / "claude", marketplaces)
    assert done.returncode == 1 and done.stdout == ""
    assert "ask the user for the folder of their passageway clone" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_docs_name_the_pinned_cli_and_the_node_it_needs():
    page = (ROOT / "docs" / "claude-code.md").read_text(encoding="utf-8")
    assert f"at a pinned version ({CLAUDE_CODE.rsplit('@', 1)[1]})" in page
    assert "Node.js 22 or newer" in page and "to run `claude plugin validate` yourself, use Node 22" in page
