"""Checks on the test suite itself: no test compares a wall-clock duration with a tight bound.

A test that times itself (``elapsed = perf_counter() - started; assert elapsed < 2``) fails when a
busy machine pauses it, whatever the code does; on CI that blocks every change (issue 36). Tests
assert the behaviour that makes a property true instead: work handed to a thread, events of a
stop sequence, answers to real requests. Where a bound stays, it is at least ten times the
quiet-machine value, and the place is listed below with its reason.

The scan reads each test module's syntax tree. A *duration* is a subtraction with a reading of a
wall clock on either side and no constant on the right (``time.perf_counter()``,
``time.monotonic()``, ``time.time()``, ``loop.time()``, or a name assigned one of them), anything
computed from one, or what a helper of the same module returns in that place. A comparison that
holds a duration, in an ``assert`` or an ``if``, is flagged; so is a deadline of under 10 s
(``time.monotonic() + 3``). Processor time (``time.thread_time()``, ``time.process_time()``) is
not a wall clock: load barely changes it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEST_FOLDERS = ("tests", "sdk/tests", "connectors/*/tests", "embedders/*/tests", "stores/*/tests",
                "plugins/*/tests")
CLOCKS = {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns"}
SHORTEST_DEADLINE = 10.0

ALLOWED = {
    "tests/test_connector.py::test_a_line_over_max_line_bytes":
        "bound 60 s, the whole call takes a fraction of a second",
    "tests/test_connector.py::test_a_timeout_kills_the_connector_and_its_child":
        "bound 60 s against a timeout of 1 s; the connector sleeps 120 s, so the bound still tells",
    "tests/test_connector.py::test_a_child_that_left_the_process_group_is_killed_too":
        "bound 60 s against a timeout of 1 s; the child holds the pipe for 120 s",
    "tests/test_connector.py::test_fake_sleep_for_one_mode_runs_into_the_timeout":
        "bound 20 s against a timeout of 1 s; the fake sleeps 30 s",
    "tests/test_embed_command.py::test_a_hanging_request_kills_the_process_group_and_the_next_call_restarts":
        "bound 60 s against a timeout of 1.5 s; the program hangs for good",
    "sdk/tests/test_http.py::test_a_deadline_ends_a_drip_that_never_trips_the_socket_timeout":
        "bound 30 s against a deadline of 1 s; the drip lasts 50 s",
    "tests/reliability/test_oauth_abuse.py::test_anonymous_registrations_keep_the_oauth_state_small":
        "bound 10 s per registration, 0.15 s in the full run (docs/reliability.json)",
    "tests/reliability/test_slow_connections.py::test_idle_and_slow_connections_do_not_lock_the_server_out":
        "a rate (log bytes a minute): a slower run only lowers it",
    "tests/reliability/test_probe3_slow_bodies.py::test_slow_bodies_at_the_cap_do_not_lock_anyone_out":
        "a rate (log lines a second of attack): a slower run only lowers it",
    "tests/reliability/test_probe3_markdown.py::test_every_markdown_reader_is_linear_on_hostile_shapes":
        "bound 20x the same reader on ordinary text plus 10 s; a quadratic reader takes minutes here",
    "tests/test_prompt.py::test_the_worst_shapes_of_a_paste_are_read_in_linear_time":
        "bound 20 s against about 0.2 s on a busy machine; the quadratic pattern took 12-40 s",
    "tests/test_prompt_names.py::test_a_setting_key_is_read_in_one_pass_over_a_long_pasted_run":
        "bound 10 s against 0.04 s; the split pattern would take hours on 200,000 characters",
}


def module_files() -> Iterator[Path]:
    for pattern in TEST_FOLDERS:
        for folder in ROOT.glob(pattern):
            yield from (path for path in folder.rglob("*.py") if ".venv" not in path.parts)


def is_clock(node: ast.AST) -> bool:
    """A call that reads a wall clock."""
    if not isinstance(node, ast.Call) or node.args or node.keywords:
        return False
    function = node.func
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
    return name in CLOCKS or (isinstance(function, ast.Attribute) and name == "time")


class Scan:
    """The flagged places of one module, as ``path::function`` names."""

    def __init__(self, tree: ast.Module, path: str) -> None:
        self.path = path
        self.returns: dict[str, set[int] | None] = {}  # helper -> positions of durations (None: all)
        self.places: set[str] = set()
        for _ in range(2):  # the second pass knows every helper's returns
            for node in tree.body:
                self.module_level(node)

    def module_level(self, node: ast.stmt) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            self.function(node, node.name)
        elif isinstance(node, ast.ClassDef):
            for child in node.body:
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                    self.function(child, f"{node.name}.{child.name}")

    def function(self, function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> None:
        for inner in ast.walk(function):  # helpers defined inside a test: their returns first
            if inner is not function and isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef):
                self.function(inner, f"{name}.{inner.name}")
        clocks: set[str] = set()
        durations: set[str] = set()
        nodes = list(ast.walk(function))
        for _ in range(3):  # names assigned from names: a few rounds reach a fixed point
            for node in nodes:
                targets, value = _assignment(node)
                if value is None:
                    continue
                if is_clock(value):
                    clocks.update(_names(targets))
                positions = self.duration_positions(value, clocks, durations)
                for index, target in enumerate(_flat(targets)):
                    if positions is None or index in positions:
                        durations.update(_names([target]))
        for node in nodes:
            if isinstance(node, ast.Return) and node.value is not None:
                positions = self.duration_positions(node.value, clocks, durations)
                if positions != set():
                    self.returns[function.name] = positions
            if isinstance(node, ast.Assert | ast.If) and any(
                isinstance(part, ast.Compare) and self.is_duration(part, clocks, durations)
                for part in ast.walk(node.test)
            ):
                self.places.add(f"{self.path}::{name}")
            targets, value = _assignment(node)
            if value is not None and _short_deadline(value):
                self.places.add(f"{self.path}::{name}")

    def duration_positions(self, value: ast.AST, clocks: set[str], durations: set[str]) -> set[int] | None:
        """Which parts of ``value`` are durations: None for all of it, a set of tuple positions."""
        if isinstance(value, ast.Tuple):
            return {index for index, part in enumerate(value.elts)
                    if self.is_duration(part, clocks, durations)}
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in self.returns:
            return self.returns[value.func.id]
        return None if self.is_duration(value, clocks, durations) else set()

    def is_duration(self, node: ast.AST, clocks: set[str], durations: set[str]) -> bool:
        for part in ast.walk(node):
            if isinstance(part, ast.Name) and part.id in durations:
                return True
            if (isinstance(part, ast.BinOp) and isinstance(part.op, ast.Sub)
                    and not isinstance(part.right, ast.Constant) and any(
                        is_clock(side) or (isinstance(side, ast.Name) and side.id in clocks)
                        for operand in (part.left, part.right) for side in ast.walk(operand))):
                return True  # clock() - started; clock() - 3600 is a moment, not a duration
            if (isinstance(part, ast.Call) and isinstance(part.func, ast.Name)
                    and self.returns.get(part.func.id, set()) is None):
                return True
        return False


def _assignment(node: ast.AST) -> tuple[list[ast.expr], ast.expr | None]:
    if isinstance(node, ast.Assign):
        return node.targets, node.value
    if isinstance(node, ast.AnnAssign | ast.AugAssign) and node.value is not None:
        return [node.target], node.value
    return [], None


def _flat(targets: list[ast.expr]) -> list[ast.expr]:
    flat: list[ast.expr] = []
    for target in targets:
        flat.extend(target.elts if isinstance(target, ast.Tuple) else [target])
    return flat


def _names(targets: list[ast.expr]) -> set[str]:
    return {node.id for target in targets for node in ast.walk(target) if isinstance(node, ast.Name)}


def _short_deadline(value: ast.expr) -> bool:
    """``clock() + 3``: a wait that gives up after less than :data:`SHORTEST_DEADLINE` seconds."""
    return (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) and is_clock(value.left)
            and isinstance(value.right, ast.Constant) and isinstance(value.right.value, int | float)
            and value.right.value < SHORTEST_DEADLINE)


def flagged_places() -> set[str]:
    places: set[str] = set()
    for path in module_files():
        relative = path.relative_to(ROOT).as_posix()
        places |= Scan(ast.parse(path.read_text(encoding="utf-8")), relative).places
    return places


def test_no_test_compares_a_wall_clock_duration_with_a_bound_unless_listed():
    unlisted = sorted(flagged_places() - set(ALLOWED))
    assert not unlisted, (
        "these tests compare a measured wall-clock time with a bound, which fails on a busy machine: "
        "assert the behaviour instead (work on a thread, events, answers), or make the bound at "
        "least ten times the quiet-machine value and list the place in tests/test_suite_meta.py "
        f"ALLOWED with its reason: {unlisted}"
    )


def test_every_allowed_place_gives_a_reason():
    assert all(reason.strip() for reason in ALLOWED.values())


def test_the_scan_finds_the_patterns_it_is_meant_to_find():
    source = '''
import time

def timed(url):
    started = time.perf_counter()
    return time.perf_counter() - started, 200

def test_a():
    started = time.monotonic()
    work()
    assert time.monotonic() - started < 2

def test_b():
    elapsed, status = timed("x")
    if status != 200 or elapsed > 1.0:
        fail()

def test_c():
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        pass

async def test_d(loop):
    started = loop.time()
    slowest = max(0.0, loop.time() - started)
    assert slowest < 1

def test_f():
    def seconds(count):
        start = time.perf_counter()
        return time.perf_counter() - start

    small, large = seconds(2), seconds(20)
    assert large < small * 25

def test_e():
    elapsed, status = timed("x")
    assert status == 200
    deadline = time.monotonic() + 30
    assert time.time() - 3600 < deadline
    began = time.thread_time()
    assert time.thread_time() - began < 5
'''
    found = Scan(ast.parse(source), "x.py").places
    assert found == {"x.py::test_a", "x.py::test_b", "x.py::test_c", "x.py::test_d", "x.py::test_f"}
