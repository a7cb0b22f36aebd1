"""The layout rules of README.md's table and docs/plugins.md ("The layout"), checked on the tree."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            if node.module in {"passageway.kernel", "passageway.kernel.text", "passageway.kernel.program"}:
                found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def test_the_kernel_imports_no_builtin():
    """The kernel's one mention of the builtins is the tuple of names in kernel/plugins.py."""
    offenders = {
        str(path.relative_to(ROOT)): sorted(name for name in imported_modules(path)
                                            if name.startswith("passageway.builtin"))
        for path in (ROOT / "kernel").rglob("*.py")
    }
    assert {path: names for path, names in offenders.items() if names} == {}


def test_the_kernel_uses_the_testing_package_only_in_check_connector():
    users = sorted(
        str(path.relative_to(ROOT)) for path in (ROOT / "kernel").rglob("*.py")
        if any(name.startswith("passageway.testing") for name in imported_modules(path))
    )
    assert users == ["kernel/commands/check_connector.py"]


def test_the_package_folder_is_a_facade():
    """passageway/ holds its __init__ and links to the real folders, and no other module."""
    entries = {path.name: path for path in (ROOT / "passageway").iterdir() if path.name != "__pycache__"}
    assert set(entries) == {"__init__.py", "kernel", "builtin", "testing", "schemas"}
    for name in ("kernel", "builtin", "testing", "schemas"):
        assert entries[name].is_symlink() and entries[name].resolve() == ROOT / name


def test_the_public_names_are_listed():
    import passageway

    assert sorted(passageway.__all__) == sorted(["PROJECT", "__version__", "hookimpl", *passageway.PUBLIC])
    assert all(hasattr(passageway, name) for name in passageway.__all__)


def test_the_public_door_names_where_each_name_is_defined():
    """Each name ``passageway`` and ``passageway.testing`` re-export is the one its module defines
    (no copy, no wrapper), and importing the door imports none of them until asked."""
    import passageway
    import passageway.testing

    for name, module in passageway.PUBLIC.items():
        assert getattr(passageway, name) is getattr(importlib.import_module(module), name), name
    for name, (module, attribute) in passageway.testing.PUBLIC.items():
        assert getattr(passageway.testing, name) is getattr(importlib.import_module(module), attribute)
    fresh = subprocess.run(
        [sys.executable, "-c", "import sys, passageway, passageway.testing; "
         "print(sorted(m for m in sys.modules if m.startswith('passageway.kernel')))"],
        capture_output=True, text=True, check=True,
    )
    assert fresh.stdout.strip() == "[]"


def test_every_public_name_reports_the_door_as_its_module():
    """As httpx's names do: a class or function of the door says ``passageway``, so a repr, a
    traceback or ``help()`` never names the module behind it (constants have no module of their own)."""
    import inspect

    import passageway

    named = {name: getattr(passageway, name) for name in passageway.__all__}
    modules = {name: value.__module__ for name, value in named.items()
               if inspect.isclass(value) or inspect.isfunction(value)}
    assert len(modules) > 30
    assert {name: module for name, module in modules.items() if module != "passageway"} == {}
    assert repr(passageway.Store) == "<class 'passageway.Store'>"
    assert "kernel" not in repr(passageway.render_answer)


def test_a_record_reached_through_the_door_still_loads():
    """Its annotations are resolved where they were written before the door renames its module."""
    script = ("import passageway; passageway.Item; from passageway.kernel.records import item_from_json; "
              "print(item_from_json({'id': 'a', 'title': 'T', 'url': None, 'version': '1', "
              "'sections': [{'text': 'x', 'heading': None, 'anchor': None}]}).sections[0].text)")
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "x"


def test_the_docs_use_the_short_paths():
    """A guide names a public name through the door (``passageway.Store``), never through the
    module behind it (``passageway.kernel.store.Store``)."""
    import passageway
    import passageway.testing

    behind = {(module, name) for name, module in passageway.PUBLIC.items()}
    behind |= set(passageway.testing.PUBLIC.values())
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *(ROOT / "docs").rglob("*.py")]
    offenders = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        offenders += [f"{page.relative_to(ROOT)}: {module}.{name}" for module, name in behind
                      if re.search(re.escape(f"{module}.{name}") + r"\b", text)]
        for module, names in re.findall(r"^from (passageway\.[\w.]+) import ([\w, ]+)$", text, re.MULTILINE):
            if all((module, name.strip()) in behind for name in names.split(",")):
                offenders.append(f"{page.relative_to(ROOT)}: from {module} import {names}")
    assert sorted(offenders) == []


def _workspace_packages() -> list[Path]:
    return sorted(path.parent for pattern in ("connectors/*/pyproject.toml", "embedders/*/pyproject.toml",
                                              "stores/*/pyproject.toml") for path in ROOT.glob(pattern))


def _plugin_packages() -> list[Path]:
    """The plugins shipped from this repository as distributions of their own (``plugins/*``)."""
    return sorted(path.parent for path in ROOT.glob("plugins/*/pyproject.toml"))


def test_no_builtin_imports_another_builtin():
    """Each builtin is a plugin of its own: it imports the kernel, never another builtin."""
    offenders = {}
    for path in (ROOT / "builtin").rglob("*.py"):
        relative = path.relative_to(ROOT / "builtin")
        own = "passageway.builtin." + (relative.parts[0] if len(relative.parts) > 1 else relative.stem)
        names = sorted(name for name in imported_modules(path) if name.startswith("passageway.builtin")
                       and name != own and not name.startswith(own + "."))
        if names:
            offenders[str(path.relative_to(ROOT))] = names
    assert offenders == {}


def test_workspace_packages_import_only_the_public_door():
    """A bundled connector, embedder program or store is shipped as a third party would ship it:
    its code imports ``passageway``, ``passageway.testing`` and ``passageway_sdk``, nothing deeper."""
    assert len(_workspace_packages()) >= 7
    offenders = {}
    for package in _workspace_packages():
        for path in package.rglob("*.py"):
            if "tests" in path.relative_to(package).parts:
                continue
            names = sorted(name for name in imported_modules(path)
                           if name.startswith("passageway.") and name != "passageway.testing")
            if names:
                offenders[str(path.relative_to(ROOT))] = names
    assert offenders == {}


def test_workspace_tests_import_no_builtin():
    """Their tests (and those of the plugins under ``plugins/``) may drive the kernel (the command
    line, a whole server) but reach a builtin only through the plugin registries, as a third
    party's tests would."""
    offenders = {}
    for package in [*_workspace_packages(), *_plugin_packages()]:
        for path in (package / "tests").rglob("*.py"):
            names = sorted(name for name in imported_modules(path) if name.startswith("passageway.builtin"))
            if names:
                offenders[str(path.relative_to(ROOT))] = names
    assert offenders == {}


def test_the_kernels_data_paths_import_one_way():
    """kernel/connector/ knows nothing of indexes or questions; kernel/index/ never imports
    kernel/query/ (the window cutting both need lives on the ground floor) and gets its connector
    runner from the kernel; kernel/query/ never runs a program."""
    forbidden = {
        "connector": ("passageway.kernel.index", "passageway.kernel.query"),
        "index": ("passageway.kernel.query", "passageway.kernel.connector"),
        "query": ("passageway.kernel.connector",),
    }
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            name for name in imported_modules(path) if name.startswith(prefixes)
        )
        for folder, prefixes in forbidden.items()
        for path in (ROOT / "kernel" / folder).rglob("*.py")
    }
    assert {path: names for path, names in offenders.items() if names} == {}


GROUND_FLOOR = ("passageway.kernel.text", "passageway.kernel.program")
"""What both data paths share, below both: the pure text rules (``kernel/text/``) and the child-program
driver (``kernel/program/``). Builtins and plugins may import it beside the door."""

CONTRACTS = {
    "passageway.kernel.records": "what a connector sends and an answer holds",
    "passageway.kernel.store": "the store contract and its optional protocols",
    "passageway.kernel.embedder": "the embedder contract and the base classes an embedder derives from",
    "passageway.kernel.ranking": "the ranker and gate contract",
    "passageway.kernel.errors": "the error types a plugin raises for a user to read",
    "passageway.kernel.hookspecs": "the reference of every hook",
    "passageway.kernel.config": "the settings a command or plugin reads (load_settings, resolve_secrets)",
    "passageway.kernel.config_file": "the tables of passageway.toml a plugin is handed",
    "passageway.kernel.tables": "the checks of a settings table's keys and values",
    "passageway.kernel.data_folder": "where a plugin's private files go, and their modes",
    "passageway.kernel.instances": "which instance's folders a command works in",
    "passageway.kernel.plugins": "the registries, for a command that builds its own embedder or store",
    "passageway.kernel.app": "the running Kernel a transport or eval is handed",
    "passageway.kernel.auth": "the bearer-password check every route that answers from the index makes",
    "passageway.kernel.http_guard": "a client's address and network, for the HTTP transports",
    "passageway.kernel.server": "the host names the server answers on",
    "passageway.kernel.durations": "how a duration is written for a person",
    "passageway.kernel.gate_levels": "the named gate levels eval measures",
    "passageway.kernel.progress": "the progress bar of a first build, shown by eval as by serve",
}
"""The kernel modules a builtin or a plugin under ``plugins/`` may import besides ``passageway``,
``passageway.testing`` and the ground floor, each with why: contracts and configuration, never a
module inside a data path (``kernel/connector``, ``kernel/index``, ``kernel/query``) or the CLI
(``kernel/cli.py``, ``kernel/commands``). A name a plugin needs from a path is given a door name."""

def _plugin_code() -> list[Path]:
    """The code of every builtin and of every plugin under ``plugins/`` (their tests aside)."""
    found = list((ROOT / "builtin").rglob("*.py"))
    for package in _plugin_packages():
        found += [path for path in package.rglob("*.py")
                  if not {"tests", ".venv"} & set(path.relative_to(package).parts)]
    return sorted(found)


def _allowed_to_a_plugin(name: str, builtin: bool) -> bool:
    return (name in {"passageway", "passageway.testing", *CONTRACTS} or name.startswith("passageway.testing.")
            or name.startswith(GROUND_FLOOR) or (builtin and name.startswith("passageway.builtin")))


def test_builtins_and_plugins_import_the_door_the_ground_floor_and_the_contracts():
    """No builtin and no plugin under ``plugins/`` reaches into a data path or the CLI: they import
    ``passageway``, ``passageway.testing``, the ground floor and :data:`CONTRACTS` (another builtin
    is the test above's business)."""
    assert _plugin_packages(), "no plugin under plugins/ was found: the rule would check nothing"
    offenders: dict[str, list[str]] = {}
    for path in _plugin_code():
        relative = str(path.relative_to(ROOT))
        builtin = relative.startswith("builtin/")
        for name in sorted(imported_modules(path)):
            if not name.startswith("passageway.") or _allowed_to_a_plugin(name, builtin):
                continue
            offenders.setdefault(relative, []).append(name)
    assert offenders == {}, "give these a door name (passageway.X) or a ground-floor path"


def test_the_ground_floor_imports_no_path_and_no_builtin():
    """The ground floor is below both paths: it imports itself and the contracts, nothing above."""
    offenders = {}
    for floor in ("text", "program"):
        for path in (ROOT / "kernel" / floor).rglob("*.py"):
            names = sorted(name for name in imported_modules(path) if name.startswith("passageway")
                           and not name.startswith(GROUND_FLOOR) and name not in CONTRACTS)
            if names:
                offenders[str(path.relative_to(ROOT))] = names
    assert offenders == {}


def test_nothing_subclasses_the_kernel():
    """What eval and the benchmarks vary is an argument of ``Kernel`` (docs/adr/0009's door holds
    for the kernel too): no class anywhere in the project derives from it, nor builds one with
    ``type(...)``."""
    offenders = []
    for folder in ("kernel", "builtin", "testing", "tests", "bench", "stores", "connectors", "embedders"):
        for path in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    bases = [ast.unparse(base) for base in node.bases]
                    if any(base.split(".")[-1] in {"Kernel", "EvalKernel"} for base in bases):
                        offenders.append(f"{path.relative_to(ROOT)}: class {node.name}")
                elif (isinstance(node, ast.Call) and ast.unparse(node.func) == "type" and len(node.args) == 3
                      and "Kernel" in ast.unparse(node.args[1])):
                    offenders.append(f"{path.relative_to(ROOT)}: type(...)")
    assert offenders == []


LINE_WARNING = 400
"""A module over this many lines is reported (a warning in the test summary): it may hold more
than one responsibility, or be a feature that wants a folder. Size is measured in functions
(ruff's complexity rules); the line count only points where to look."""

LINE_CAP = 450
"""No module over this many lines: past the warning, a file is split by responsibility, or its
feature becomes a folder; never cut in half at a line count."""

STILL_SPLITTING: dict[str, str] = {}
"""Modules over the cap while another change splits them; each entry goes when its split lands
(the test below fails on an entry whose module is back under the cap, so none is forgotten)."""


def _source_modules() -> list[Path]:
    """Every Python module the project ships or runs, tests aside (a test module mirrors one)."""
    folders = ("kernel", "builtin", "testing", "sdk", "connectors", "embedders", "stores", "plugins", "bench")
    found = [ROOT / "passageway" / "__init__.py"]
    for folder in folders:
        found += [path for path in (ROOT / folder).rglob("*.py")
                  if not {"tests", ".venv", "node_modules"} & set(path.relative_to(ROOT).parts)]
    return sorted(found)


def test_no_module_passes_the_line_cap():
    lengths = {str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
               for path in _source_modules()}
    assert len(lengths) > 100
    long = {path: lines for path, lines in lengths.items() if LINE_WARNING < lines <= LINE_CAP}
    if long:
        warnings.warn(f"over {LINE_WARNING} lines, look for a second responsibility or a folder: {long}",
                      stacklevel=1)
    over = {path: lines for path, lines in lengths.items()
            if lines > LINE_CAP and path not in STILL_SPLITTING}
    assert over == {}, f"split these by responsibility (at most {LINE_CAP} lines each): {over}"
    stale = sorted(path for path in STILL_SPLITTING if lengths.get(path, 0) <= LINE_CAP)
    assert stale == [], f"remove from STILL_SPLITTING in tests/test_layout.py, now split: {stale}"
