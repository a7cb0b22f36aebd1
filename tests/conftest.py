"""The suite runs in parallel (pytest-xdist, ``-n auto --dist loadgroup`` in pyproject.toml).

Tests that share something costly, or something two tests must not use at once, run on one worker:
the scheduler below (:func:`pytest_xdist_make_scheduler`) hands out every test of such a group as
one unit. A group is every test of a module that defines a module-, package- or session-scoped
fixture (built once per worker, so then once in all), or a group named in :data:`GROUPS`.
(pytest-xdist's own ``xdist_group`` mark does nothing with pytest 9.2, which keeps a node's id
elsewhere than the attribute xdist rewrites; so the groups are named here, by module.)

The slowest tests are handed out first (:data:`SLOW_FIRST`), so that none of them starts last and
keeps one worker busy after the others are done. ``-n auto`` starts one worker more than there are
cores, at least two: many tests wait on subprocesses and servers, so a core one worker leaves idle
serves another.
"""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

GROUPS = {
    # npm installs each tool into one folder of ~/.cache: two installs at once would collide.
    "tests/test_mcp_npm.py": "npm-tools",
}
SLOW_FIRST = (
    # Modules with tests of 10 s or more in a serial run (uv run pytest -q --durations=80).
    "tests/test_readme_first_run.py", "tests/test_mcp_npm.py", "tests/test_e5_onnx_corpus.py",
    "tests/test_e5_onnx_convert.py", "tests/test_e5_onnx_tokenizer.py", "tests/test_e5_onnx_graph.py",
    "connectors/trilium/tests/test_trilium_quality.py", "stores/postgres/tests/test_replicas.py",
    "tests/test_stdio_bridge.py", "tests/test_progress.py", "tests/reliability/test_slow_connections.py",
    "tests/reliability/test_connectors.py", "tests/reliability/test_poisoned_batches.py",
    "plugins/passage-index/tests/test_passage_index_embed.py", "tests/test_plugin_files.py",
    "tests/test_schema_ajv.py", "plugins/passage-index/tests/test_generators.py",
)
SHARED_FIXTURE = re.compile(r"@pytest\.fixture\([^)]*scope=[\"'](module|package|session)[\"']")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """``RELIABILITY_FULL=1`` runs in one process: its figures are gathered in one place and written
    to docs/reliability.json at the end (tests/reliability/conftest.py), which workers cannot do."""
    if os.environ.get("RELIABILITY_FULL") == "1" and getattr(config.option, "dist", "no") != "no":
        config.option.dist = "no"
        config.option.numprocesses = 0
        config.option.tx = []


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Workers for ``-n auto``: the cores plus one, at least two (many tests wait, not compute)."""
    return max(2, (os.cpu_count() or 1) + 1)


@cache
def group_of(module: str) -> str | None:
    """The group of the tests in ``module`` (a path from the repository root), or None."""
    if module in GROUPS:
        return GROUPS[module]
    try:
        source = (ROOT / module).read_text(encoding="utf-8")
    except OSError:
        return None
    return module if SHARED_FIXTURE.search(source) else None


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """``--dist loadgroup``, with the groups of :func:`group_of` (see the module's docstring)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            group = group_of(nodeid.split("::", 1)[0])
            return f"group:{group}" if group else nodeid

    return ModuleGroups(config, log)  # type: ignore[arg-type]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a worker, the slowest modules' tests first (groups are handed out before single tests,
    the largest first; then single tests go in this order)."""
    if not hasattr(config, "workerinput"):
        return
    slow = {module: rank for rank, module in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: slow.get(item.nodeid.split("::", 1)[0], len(slow)))
