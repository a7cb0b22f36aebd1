"""The documentation stays true to the code (V11).

Every environment variable, every key of passageway.toml, every option of every subcommand and
every hook is documented; every bundled program's settings are in its README; relative links
between pages resolve; CI runs the README's test command.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from passageway.builtin.embedders.options import COMMAND_KEYS, ONNX_KEYS
from passageway.kernel import cli, config, config_file, hookspecs

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def all_docs() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in sorted(DOCS.rglob("*.md")))


def configuration_page() -> str:
    return (DOCS / "configuration.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("variable", sorted(config.ENVIRONMENT))
def test_every_environment_variable_is_documented(variable):
    assert f"`{variable}`" in configuration_page()


@pytest.mark.parametrize(
    "key",
    sorted(config_file.CONNECTOR_KEYS | config_file.EMBEDDER_KEYS | config_file.TOP_LEVEL_KEYS | ONNX_KEYS
           | COMMAND_KEYS),
)
def test_every_config_key_is_documented(key):
    assert f"`{key}`" in configuration_page() or f"[{key}" in configuration_page()


def subcommand_options() -> list[tuple[str, str]]:
    parser, _names = cli.build_parser()
    found = []

    def walk(prefix: str, current: argparse.ArgumentParser) -> None:
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(f"{prefix} {name}".strip(), sub)
            elif isinstance(action, argparse._HelpAction | argparse._VersionAction):
                continue
            else:
                for option in action.option_strings:
                    if option.startswith("--"):
                        found.append((prefix or "passageway", option))

    walk("", parser)
    return found


def test_there_are_subcommands_to_check():
    assert {"plugins"} <= cli.build_parser()[1]


@pytest.mark.parametrize(("command", "option"), subcommand_options())
def test_every_command_line_option_is_documented(command, option):
    assert re.search(rf"{re.escape(option)}\b", all_docs()), f"{command} {option} is not in docs/"


@pytest.mark.parametrize("command", sorted(cli.build_parser()[1]))
def test_every_subcommand_is_documented(command):
    assert f"passageway {command}" in all_docs()


@pytest.mark.parametrize("hook", sorted(name for name in dir(hookspecs) if name.startswith("passageway_")))
def test_every_hook_is_in_the_plugin_page(hook):
    assert f"`{hook}(" in (DOCS / "plugins.md").read_text(encoding="utf-8")


SETTING_READ = re.compile(r"""(?:env|environ|settings)(?:\.get\(|\[)\s*["']([A-Z][A-Z0-9_]+)["']""")


def bundled_packages() -> list[Path]:
    return sorted(
        path.parent
        for pattern in ("connectors/*/pyproject.toml", "embedders/*/pyproject.toml")
        for path in ROOT.glob(pattern)
    )


@pytest.mark.parametrize("package", bundled_packages(), ids=lambda path: path.name)
def test_every_setting_of_a_bundled_program_is_in_its_readme(package):
    readme = package / "README.md"
    assert readme.is_file(), f"{package.relative_to(ROOT)} has no README.md"
    text = readme.read_text(encoding="utf-8")
    sources = [p for p in package.rglob("*.py") if "tests" not in p.relative_to(package).parts]
    settings = {name for path in sources for name in SETTING_READ.findall(path.read_text(encoding="utf-8"))}
    settings -= {"PATH", "HOME", "PASSAGEWAY_PROTOCOL"}
    missing = sorted(name for name in settings if f"`{name}`" not in text)
    assert not missing, f"{readme.relative_to(ROOT)} does not document {missing}"


def markdown_files() -> list[Path]:
    files = [*sorted(DOCS.rglob("*.md")), ROOT / "README.md"]
    files += sorted(ROOT.glob("connectors/*/README.md")) + sorted(ROOT.glob("embedders/*/README.md"))
    files += sorted(ROOT.glob("stores/*/README.md"))
    files += [ROOT / "sdk" / "README.md"] if (ROOT / "sdk" / "README.md").exists() else []
    return files


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", markdown_files(), ids=lambda path: str(path.relative_to(ROOT)))
def test_relative_links_resolve(page):
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        assert (page.parent / target).exists(), f"{page.relative_to(ROOT)} links to missing {target}"


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^(uv run pytest[^\n#]*?)\s+#", readme, flags=re.MULTILINE)
    assert match, "README.md has no test command line"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert match.group(1).strip() in ci.splitlines()


def test_the_guides_sdk_example_is_the_tested_file():
    guide = (DOCS / "write-a-connector.md").read_text(encoding="utf-8")
    example = (ROOT / "sdk" / "tests" / "folder_sdk.py").read_text(encoding="utf-8")
    assert f"```python\n{example}```" in guide
