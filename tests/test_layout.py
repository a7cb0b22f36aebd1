"""The layout rules of README.md's table and docs/plugins.md ("The layout"), checked on the tree."""

from __future__ import annotations

import ast
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

    assert sorted(passageway.__all__) == ["PROJECT", "__version__", "hookimpl"]
    assert all(hasattr(passageway, name) for name in passageway.__all__)


def test_the_kernels_data_paths_import_one_way():
    """kernel/connector/ knows nothing of indexes or questions; kernel/index/ never imports
    kernel/query/ (the window cutting both need lives on the index path)."""
    forbidden = {
        "connector": ("passageway.kernel.index", "passageway.kernel.query"),
        "index": ("passageway.kernel.query",),
    }
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            name for name in imported_modules(path) if name.startswith(prefixes)
        )
        for folder, prefixes in forbidden.items()
        for path in (ROOT / "kernel" / folder).rglob("*.py")
    }
    assert {path: names for path, names in offenders.items() if names} == {}
