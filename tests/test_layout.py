"""The layout rules of README.md's table and docs/plugins.md ("The layout"), checked on the tree."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
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
    """Their tests may drive the kernel (the command line, a whole server) but reach a builtin only
    through the plugin registries, as a third party's tests would."""
    offenders = {}
    for package in _workspace_packages():
        for path in (package / "tests").rglob("*.py"):
            names = sorted(name for name in imported_modules(path) if name.startswith("passageway.builtin"))
            if names:
                offenders[str(path.relative_to(ROOT))] = names
    assert offenders == {}


def test_the_kernels_data_paths_import_one_way():
    """kernel/connector/ knows nothing of indexes or questions; kernel/index/ never imports
    kernel/query/ (the window cutting both need lives on the index path) and gets its connector
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


LINE_CAP = 400
"""The team rule: no module over about 400 lines. A longer one holds more than one responsibility
(or one that wants a folder); split it by responsibility, never by cutting it in half."""

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
    over = {path: lines for path, lines in lengths.items()
            if lines > LINE_CAP and path not in STILL_SPLITTING}
    assert over == {}, f"split these by responsibility (at most {LINE_CAP} lines each): {over}"
    stale = sorted(path for path in STILL_SPLITTING if lengths.get(path, 0) <= LINE_CAP)
    assert stale == [], f"remove from STILL_SPLITTING in tests/test_layout.py, now split: {stale}"
