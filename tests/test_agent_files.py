"""The files written for AI agents (the skills and llms.txt) say only what exists (V11).

Every ``passageway`` subcommand and option a skill runs exists in the CLI; every environment
variable it names is passageway's, the system's, or documented; every repository path it names
exists; no skill holds a credential or a path of one machine; the connector skill's example is
the guide's file and passes ``passageway check-connector``; the connect skill's commands do what
it says.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from passageway.kernel import cli, config

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "hooks"
SKILL_FILES = sorted((PLUGIN / "skills").glob("*/SKILL.md"))
AGENT_FILES = [*SKILL_FILES, ROOT / "llms.txt"]
SYSTEM_VARIABLES = {"HOME", "PATH", "USER", "CLAUDE_PLUGIN_ROOT", "CLAUDE_CONFIG_DIR", "EDITOR"}
SKILL_VARIABLES = {"REPO"}
"""Set by the skills themselves: ``REPO`` is the repository the plugin was added from."""


def documentation() -> str:
    pages = [*ROOT.glob("docs/**/*.md"), *ROOT.glob("connectors/*/README.md"),
             *ROOT.glob("embedders/*/README.md")]
    return "\n".join(path.read_text(encoding="utf-8") for path in pages)


def code_of(path: Path) -> list[str]:
    """The fenced blocks and inline code spans of a markdown file: what an agent would run."""
    text = path.read_text(encoding="utf-8")
    blocks = re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.DOTALL)
    rest = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    return blocks + re.findall(r"`([^`\n]+)`", rest)


def passageway_invocations(path: Path) -> list[list[str]]:
    """Each ``passageway [--instance NAME] SUBCOMMAND [options]``, up to the end of its command."""
    found = []
    for code in code_of(path):
        code = code.replace("\\\n", " ")
        for segment in re.split(r"&&|\|\||;|\||\(|\)|\n", code):
            words = segment.split()
            while words and re.match(r"[A-Z_]+=", words[0]):  # VARIABLE=value passageway ...
                words = words[1:]
            if words[:1] == ["passageway"]:
                invocation = words[1:]
                if "--" in invocation:
                    invocation = invocation[:invocation.index("--")]
                found.append(invocation)
    return found


def parser_for(words: list[str]) -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser of the subcommand ``words`` names, and the options given to it."""
    parser, names = cli.build_parser()
    words = list(words)
    if words[:1] == ["--instance"]:
        words = words[2:]
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    if not words or words[0].startswith("-"):
        return parser, [w.split("=")[0] for w in words if w.startswith("--")]
    assert words[0] in names, f"`passageway {words[0]}` is not a command (the commands are {sorted(names)})"
    sub = subparsers.choices[words[0]]
    actions = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
    if actions and len(words) > 1 and not words[1].startswith("-"):  # passageway model list
        assert words[1] in actions[0].choices, f"`passageway {words[0]} {words[1]}` does not exist"
        sub = actions[0].choices[words[1]]
    return sub, [w.split("=")[0] for w in words[1:] if w.startswith("--")]


@pytest.mark.parametrize("path", AGENT_FILES, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_passageway_command_and_option_exists(path):
    invocations = passageway_invocations(path)
    if path.name == "SKILL.md":
        assert invocations or path.parent.name == "passageway-connect", "no passageway command found"
    for words in invocations:
        parser, options = parser_for(words)
        known = {option for action in parser._actions for option in action.option_strings} | {"--instance"}
        for option in options:
            command = " ".join(words)
            assert option in known, f"{path.parent.name}: `passageway {command}`: {option} does not exist"


def test_the_invocation_parser_finds_commands_and_refuses_unknown_ones(tmp_path):
    page = tmp_path / "SKILL.md"
    page.write_text("Run `passageway --instance work eval cases.toml --sweep 0.8` and\n"
                    "```\npassageway statuz\n```\n")
    invocations = passageway_invocations(page)
    assert ["--instance", "work", "eval", "cases.toml", "--sweep", "0.8"] in invocations
    with pytest.raises(AssertionError, match="statuz"):
        parser_for(["statuz"])
    with pytest.raises(AssertionError, match="model fetch"):
        parser_for(["model", "fetch"])


@pytest.mark.parametrize("path", AGENT_FILES, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_environment_variable_exists(path):
    text = path.read_text(encoding="utf-8")
    named = set(re.findall(r"\$\{?([A-Z][A-Z0-9_]+)", text))
    named |= set(re.findall(r"\b(PASSAGEWAY_[A-Z0-9_]+)", text))
    named |= set(re.findall(r"(?:--env |--secret |\b)([A-Z][A-Z0-9_]{2,})=", text))
    docs = documentation()
    for name in sorted(named):
        if name.startswith("PASSAGEWAY_"):
            assert name in config.ENVIRONMENT or f"`{name}`" in docs, f"{path.name}: {name} does not exist"
        elif name not in SYSTEM_VARIABLES | SKILL_VARIABLES:
            assert name in docs or name in {"SOURCE_TOKEN", "MY_SOURCE_TOKEN", "VARIABLE", "SETTING"}, (
                f"{path.parent.name}: {name} is in no page of the documentation")


@pytest.mark.parametrize("path", SKILL_FILES, ids=lambda path: path.parent.name)
def test_every_repository_path_exists(path):
    """``$REPO/...`` names a file of the repository, ``${CLAUDE_PLUGIN_ROOT}/...`` one of the plugin."""
    text = path.read_text(encoding="utf-8")
    named = [(ROOT, relative) for relative in re.findall(r"\$REPO/([\w./<>-]+)", text)]
    named += [(PLUGIN, relative) for relative in re.findall(r"\$\{CLAUDE_PLUGIN_ROOT\}/([\w./<>-]+)", text)]
    assert any(folder == ROOT for folder, _ in named), "a skill reads the documentation in the repository"
    for folder, relative in named:
        relative = relative.rstrip(".")
        if "<" in relative:
            pattern = re.sub(r"<[^>]+>", "*", relative)
            assert list(folder.glob(pattern)), f"{path.parent.name}: nothing matches {relative}"
        else:
            where = f"{path.parent.name}: {relative} does not exist in {folder.name}/"
            assert (folder / relative).exists(), where


@pytest.mark.parametrize("path", SKILL_FILES, ids=lambda path: path.parent.name)
def test_every_skill_finds_the_repository_before_it_reads_it(path):
    """The plugin holds no documentation: each skill sets ``REPO`` with the finder first."""
    text = path.read_text(encoding="utf-8")
    finder = 'REPO="$(python3 "${CLAUDE_PLUGIN_ROOT}/skills/passageway/repository.py")"'
    assert finder in text
    assert text.index(finder) < text.index("$REPO/")


@pytest.mark.parametrize("path", SKILL_FILES, ids=lambda path: path.parent.name)
def test_every_skill_it_refers_to_exists(path):
    for name in re.findall(r"(?<![\w/])/((?:passageway|create-passageway)[a-z-]*)\b", path.read_text()):
        assert (PLUGIN / "skills" / name / "SKILL.md").is_file(), f"{path.parent.name}: /{name} is no skill"


@pytest.mark.parametrize("path", SKILL_FILES, ids=lambda path: path.parent.name)
def test_the_header_names_the_skill_and_says_when_to_use_it(path):
    text = path.read_text(encoding="utf-8")
    header = re.match(r"---\n(.*?)\n---\n", text, flags=re.DOTALL)
    assert header, "SKILL.md starts with a front matter block"
    fields = dict(line.split(": ", 1) for line in header.group(1).splitlines())
    assert fields["name"] == path.parent.name
    assert 40 < len(fields["description"]) <= 1024
    assert "Use when" in fields["description"]


MACHINE_PATH = re.compile(r"(?<![\w.])(/home/\w|/Users/\w|/root\b|/work/|/tmp/|/var/folders|[A-Z]:\\\\Users)")
CREDENTIAL = re.compile(
    r"(sk-[A-Za-z0-9]{16,}|ghp_[A-Za-z0-9]{20,}|xox[bp]-|AKIA[0-9A-Z]{16}|Bearer [A-Za-z0-9_\-]{16,}"
    r"|(?i:password|token|secret|api_key)\s*[=:]\s*[\"'](?!env:)[^\"'$<{]{6,}[\"'])"
)


@pytest.mark.parametrize("path", [*SKILL_FILES, *(PLUGIN / "skills").glob("*/*.py"), ROOT / "llms.txt"],
                         ids=lambda path: str(path.relative_to(ROOT)))
def test_no_credential_and_no_path_of_one_machine(path):
    text = path.read_text(encoding="utf-8")
    assert not MACHINE_PATH.search(text), MACHINE_PATH.search(text)
    assert not CREDENTIAL.search(text), CREDENTIAL.search(text)


def test_the_checks_would_catch_a_credential_and_a_machine_path():
    assert CREDENTIAL.search('token = "c0rrect-horse-battery"')
    assert CREDENTIAL.search("Authorization: Bearer 3b1f0c9e8d7a6b5c4d3e2f1a")
    assert not CREDENTIAL.search('-H "Authorization: Bearer $(cat ~/.config/passageway/password)"')
    assert not CREDENTIAL.search('secrets = { TOKEN = "env:SOURCE_TOKEN" }')
    assert MACHINE_PATH.search("FOLDER=/home/anna/notes")
    assert not MACHINE_PATH.search("FOLDER=/full/path/to/the/notes")


# ---------------------------------------------------------------------------------------------
# The connector skill's example, and the connect skill's commands
# ---------------------------------------------------------------------------------------------


def python_block(skill: str) -> str:
    text = (PLUGIN / "skills" / skill / "SKILL.md").read_text(encoding="utf-8")
    [block] = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    return block


def test_the_connector_skill_carries_the_guides_example():
    assert python_block("create-passageway-connector") == (
        ROOT / "docs" / "examples" / "folder_connector.py").read_text(encoding="utf-8")


def test_the_connector_skills_example_passes_check_connector(tmp_path):
    script = tmp_path / "folder_connector.py"
    script.write_text(python_block("create-passageway-connector"), encoding="utf-8")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "lighthouse.txt").write_text("A lighthouse guides ships past the reef at night.")
    (notes / "harbour.txt").write_text("The harbour holds forty boats in winter.")
    done = subprocess.run(
        [sys.executable, "-m", "passageway.kernel.cli", "check-connector", "--env", f"FOLDER={notes}",
         "--", sys.executable, str(script)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PASSAGEWAY_LOAD_PLUGINS": ""},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "FAIL" not in done.stdout


def test_the_connect_skill_writes_the_hook_file_readable_only_by_the_user(tmp_path):
    text = (PLUGIN / "skills" / "passageway-connect" / "SKILL.md").read_text(encoding="utf-8")
    program = re.search(r"<<'WRITE'\n(.*?)\nWRITE\n", text, flags=re.DOTALL).group(1)  # type: ignore[union-attr]
    password_file = tmp_path / "password"
    password_file.write_text("s3cret-for-the-hook\n")
    config_dir = tmp_path / "claude"
    done = subprocess.run(
        [sys.executable, "-", "http://127.0.0.1:8082", str(password_file), "passageway.json"], input=program,
        capture_output=True, text=True, timeout=60,
        env={"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(config_dir)},
    )
    assert done.returncode == 0, done.stderr
    target = config_dir / "plugin-data" / "passageway" / "passageway.json"
    assert json.loads(target.read_text()) == {"url": "http://127.0.0.1:8082", "token": "s3cret-for-the-hook"}
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert "s3cret" not in done.stdout + done.stderr


async def test_the_connect_skills_password_check_answers_200_without_a_search(tmp_path):
    """`{"prompt": "ok"}` with the right password is 200 (not a question: no search); wrong is 401."""
    import aiohttp

    from tests.server_helpers import PASSWORD, make_kernel, running_server, write_instance

    kernel = make_kernel(write_instance(tmp_path))
    async with running_server(kernel, start_sync=False) as url, aiohttp.ClientSession() as http:
        for password, status in ((PASSWORD, 200), ("wrong", 401)):
            async with http.post(f"{url}/recall", json={"prompt": "ok"},
                                 headers={"Authorization": f"Bearer {password}"}) as response:
                assert response.status == status
                if status == 200:
                    assert (await response.json())["context"] == ""


async def test_the_connect_skills_hook_file_and_try_it_give_passages_from_a_live_server(tmp_path):
    """Steps 3 and 5 of the connect skill, as written, against a live server: the hook answers."""
    import asyncio

    from tests.server_helpers import PASSWORD, make_kernel, running_server, wait_built, write_instance

    text = (PLUGIN / "skills" / "passageway-connect" / "SKILL.md").read_text(encoding="utf-8")
    write = re.search(r"```\n(python3 - .*?WRITE\n)```", text, flags=re.DOTALL).group(1)  # type: ignore[union-attr]
    try_it = re.search(r"## 5\. Try it\n\n```\n(.*?)```", text, flags=re.DOTALL).group(1)  # type: ignore[union-attr]
    question = "how does a refracting telescope gather starlight with a lens?"
    home = tmp_path / "home"
    (home / ".config" / "passageway").mkdir(parents=True)
    (home / ".config" / "passageway" / "password").write_text(PASSWORD + "\n")
    (tmp_path / "server").mkdir()
    kernel = make_kernel(write_instance(tmp_path / "server"))
    environ = {"HOME": str(home), "PATH": os.environ.get("PATH", ""), "CLAUDE_PLUGIN_ROOT": str(PLUGIN),
               "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "PASSAGEWAY_HOOK_TIMEOUT": "20"}
    async with running_server(kernel) as url:
        await wait_built(kernel)
        script = (write.replace("http://127.0.0.1:8082", url)
                  + try_it.replace("what do my notes say about this project?", question))
        process = await asyncio.create_subprocess_exec(
            "bash", "-c", script, env=environ, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        output, errors = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, errors.decode()
    lines = output.decode().splitlines()
    assert lines[0].startswith("wrote ") and lines[0].endswith("plugin-data/passageway/passageway.json")
    context = json.loads(lines[1])["hookSpecificOutput"]["additionalContext"]
    assert "Refracting telescope" in context
    assert PASSWORD not in output.decode() + errors.decode()


@pytest.mark.parametrize("skill", ["passageway-add-source", "create-passageway-connector"])
def test_the_connector_tables_a_skill_writes_are_valid_configuration(skill):
    """Each ```toml block is read by passageway's own configuration parser, and each module it
    runs is a bundled connector's."""
    text = (PLUGIN / "skills" / skill / "SKILL.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```toml\n(.*?)```", text, flags=re.DOTALL)
    assert blocks
    for block in blocks:
        settings = config.parse_config_text(block.replace('"PYTHON"', '"/usr/bin/python3"'), skill)
        for connector in settings.connectors:
            if "-m" in connector.command:
                module = connector.command[connector.command.index("-m") + 1]
                bundled = list(ROOT.glob(f"connectors/*/{module}/__main__.py"))
                assert bundled, f"{module} is no bundled connector"
        # The parser accepts only env:NAME references as secrets; every block with a token has one.
        assert ("secrets" in block) == any(connector.secrets for connector in settings.connectors)
