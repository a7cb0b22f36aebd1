#!/usr/bin/env python3
"""Copy the public documentation set into corpus/docs/ from pinned commits, reproducibly.

    python corpus/docs/fetch.py                      # clones each repository from GitHub
    python corpus/docs/fetch.py --mirror DIR ...     # or reads existing git directories (owner+name)

Each project names its repository, the commit the files are read at, the folder of the docs in
that repository and the exact files; the script writes them byte for byte under
corpus/docs/<project>/ with the same relative paths, copies the licence file, and fails when a
file is missing at that commit. Running it twice gives the same bytes (MANIFEST.sha256 checks it).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

PROJECTS = {
    "starship": {
        "repo": "starship/starship",
        "commit": "6f33dcec91b758ccbae4ed850eaa6feabff798f9",
        "licence": "LICENSE",
        "docs": "docs/",
        # English pages go to starship/en/, their German translation (de-DE) to starship/de/; the
        # German config/README.md (330 kB, the English one's translation) is left out to keep the
        # set small, so German questions about module options must cross to the English page.
        "rename": {"de-DE/": "de/", "": "en/"},
        "files": [
            "README.md",
            "advanced-config/README.md",
            "config/README.md",
            "faq/README.md",
            "guide/README.md",
            "installing/README.md",
            "migrating-to-0.45.0/README.md",
            "presets/README.md",
            "presets/bracketed-segments.md",
            "presets/catppuccin-powerline.md",
            "presets/gruvbox-rainbow.md",
            "presets/jetpack.md",
            "presets/nerd-font.md",
            "presets/no-empty-icons.md",
            "presets/no-nerd-font.md",
            "presets/no-runtimes.md",
            "presets/pastel-powerline.md",
            "presets/plain-text.md",
            "presets/pure-preset.md",
            "presets/tokyo-night.md",
            "de-DE/README.md",
            "de-DE/advanced-config/README.md",
            "de-DE/faq/README.md",
            "de-DE/guide/README.md",
            "de-DE/installing/README.md",
            "de-DE/migrating-to-0.45.0/README.md",
            "de-DE/presets/README.md",
            "de-DE/presets/bracketed-segments.md",
            "de-DE/presets/catppuccin-powerline.md",
            "de-DE/presets/gruvbox-rainbow.md",
            "de-DE/presets/jetpack.md",
            "de-DE/presets/nerd-font.md",
            "de-DE/presets/no-empty-icons.md",
            "de-DE/presets/no-nerd-font.md",
            "de-DE/presets/no-runtimes.md",
            "de-DE/presets/pastel-powerline.md",
            "de-DE/presets/plain-text.md",
            "de-DE/presets/pure-preset.md",
            "de-DE/presets/tokyo-night.md",
        ],
    },
    "typer": {
        "repo": "fastapi/typer",
        "commit": "9a7b2e83f6b62c750d6026b0de9ebf2026a8b8fa",
        "licence": "LICENSE",
        "docs": "docs/",
        "rename": {},
        "files": [
            "about/index.md",
            "alternatives.md",
            "contributing.md",
            "environment-variables.md",
            "features.md",
            "help-typer.md",
            "index.md",
            "management.md",
            "reference/context.md",
            "reference/file_objects.md",
            "reference/index.md",
            "reference/parameters.md",
            "reference/run_launch.md",
            "reference/typer.md",
            "resources/index.md",
            "tutorial/app-dir.md",
            "tutorial/arguments/default.md",
            "tutorial/arguments/envvar.md",
            "tutorial/arguments/help.md",
            "tutorial/arguments/index.md",
            "tutorial/arguments/optional.md",
            "tutorial/arguments/other-uses.md",
            "tutorial/click.md",
            "tutorial/commands/arguments.md",
            "tutorial/commands/callback.md",
            "tutorial/commands/context.md",
            "tutorial/commands/help.md",
            "tutorial/commands/index.md",
            "tutorial/commands/name.md",
            "tutorial/commands/one-or-multiple.md",
            "tutorial/commands/options.md",
            "tutorial/exceptions.md",
            "tutorial/first-steps.md",
            "tutorial/index.md",
            "tutorial/install.md",
            "tutorial/launch.md",
            "tutorial/multiple-values/arguments-with-multiple-values.md",
            "tutorial/multiple-values/index.md",
            "tutorial/multiple-values/multiple-options.md",
            "tutorial/multiple-values/options-with-multiple-values.md",
            "tutorial/one-file-per-command.md",
            "tutorial/options-autocompletion.md",
            "tutorial/options/callback-and-context.md",
            "tutorial/options/help.md",
            "tutorial/options/index.md",
            "tutorial/options/name.md",
            "tutorial/options/password.md",
            "tutorial/options/prompt.md",
            "tutorial/options/required.md",
            "tutorial/options/version.md",
            "tutorial/package.md",
            "tutorial/parameter-types/bool.md",
            "tutorial/parameter-types/custom-types.md",
            "tutorial/parameter-types/datetime.md",
            "tutorial/parameter-types/enum.md",
            "tutorial/parameter-types/file.md",
            "tutorial/parameter-types/index.md",
            "tutorial/parameter-types/number.md",
            "tutorial/parameter-types/path.md",
            "tutorial/parameter-types/uuid.md",
            "tutorial/printing.md",
            "tutorial/progressbar.md",
            "tutorial/prompt.md",
            "tutorial/subcommands/add-typer.md",
            "tutorial/subcommands/callback-override.md",
            "tutorial/subcommands/index.md",
            "tutorial/subcommands/name-and-help.md",
            "tutorial/subcommands/nested-subcommands.md",
            "tutorial/subcommands/single-file.md",
            "tutorial/terminating.md",
            "tutorial/testing.md",
            "tutorial/typer-app.md",
            "tutorial/typer-command.md",
            "virtual-environments.md",
        ],
    },
    "starlette": {
        "repo": "encode/starlette",
        "commit": "cb8f84f5284dc301ca7a31eb732b9e140769dd48",
        "licence": "LICENSE.md",
        "docs": "docs/",
        "rename": {},
        "files": [
            "applications.md",
            "authentication.md",
            "background.md",
            "config.md",
            "contributing.md",
            "database.md",
            "endpoints.md",
            "exceptions.md",
            "graphql.md",
            "index.md",
            "lifespan.md",
            "middleware.md",
            "requests.md",
            "responses.md",
            "routing.md",
            "schemas.md",
            "server-push.md",
            "staticfiles.md",
            "templates.md",
            "testclient.md",
            "third-party-packages.md",
            "threadpool.md",
            "websockets.md",
        ],
    },
    "mkdocs": {
        # The held-out project of the answerability score (issue 35): every markdown page of
        # docs/ except the release notes (111 kB).
        "repo": "mkdocs/mkdocs",
        "commit": "2862536793b3c67d9d83c33e0dd6d50a791928f8",
        "licence": "LICENSE",
        "docs": "docs/",
        "rename": {},
        "files": [
            "about/contributing.md",
            "about/license.md",
            "dev-guide/README.md",
            "dev-guide/api.md",
            "dev-guide/plugins.md",
            "dev-guide/themes.md",
            "dev-guide/translations.md",
            "getting-started.md",
            "index.md",
            "user-guide/README.md",
            "user-guide/choosing-your-theme.md",
            "user-guide/cli.md",
            "user-guide/configuration.md",
            "user-guide/customizing-your-theme.md",
            "user-guide/deploying-your-docs.md",
            "user-guide/installation.md",
            "user-guide/localizing-your-theme.md",
            "user-guide/writing-your-docs.md",
        ],
    },
}


def target(project: dict, relative: str) -> str:
    """Where a docs file goes inside the project's folder (the first matching prefix renames it)."""
    for prefix, replacement in project["rename"].items():
        if relative.startswith(prefix):
            return replacement + relative[len(prefix):]
    return relative


def git_dir(name: str, project: dict, mirrors: list[Path], scratch: Path) -> Path:
    wanted = project["repo"].replace("/", "+")
    for mirror in mirrors:
        for candidate in (mirror / wanted / "repo", mirror / wanted, mirror):
            probe = subprocess.run(["git", "-C", str(candidate), "cat-file", "-e", project["commit"]],
                                   capture_output=True)
            if probe.returncode == 0:
                return candidate
    clone = scratch / name
    subprocess.run(["git", "clone", "--quiet", "--bare", "--filter=blob:none",
                    f"https://github.com/{project['repo']}.git", str(clone)], check=True)
    return clone


def show(repo: Path, commit: str, path: str) -> bytes:
    result = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"], capture_output=True)
    if result.returncode != 0:
        sys.exit(f"fetch.py: {path} is not in {repo} at {commit}; update the file list")
    return result.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", action="append", type=Path, default=[],
                        help="a folder holding git directories named owner+name (checked before cloning)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        for name, project in PROJECTS.items():
            repo = git_dir(name, project, args.mirror, Path(scratch))
            folder = HERE / name
            (HERE / "licenses").mkdir(exist_ok=True)
            (HERE / "licenses" / f"{name}-{Path(project['licence']).stem}.txt").write_bytes(
                show(repo, project["commit"], project["licence"]))
            for relative in project["files"]:
                data = show(repo, project["commit"], project["docs"] + relative)
                out = folder / target(project, relative)
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(data)
            print(f"fetch.py: {name}: {len(project['files'])} files at {project['commit'][:12]}")


if __name__ == "__main__":
    main()
