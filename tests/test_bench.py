"""bench/ as a tool: every script answers --help without starting a run, imports no other script,
and is listed in bench/README.md."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
SCRIPTS = sorted(path for path in BENCH.glob("*.py"))

# One process runs every script's --help in turn (the imports they share are paid once): a script
# must leave through argparse's exit 0 with a usage line; one that returns, fails or runs past the
# alarm started a run instead.
_HELP_ALL = """
import contextlib, io, json, runpy, signal, sys
sys.path.insert(0, sys.argv[1])  # what `python bench/<script>.py` has: bench/ on the path
results = {}

def late(*_):
    raise TimeoutError("still running after 30 s")

signal.signal(signal.SIGALRM, late)
for path in sys.argv[2:]:
    out = io.StringIO()
    sys.argv = [path, "--help"]
    signal.alarm(30)
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(path, run_name="__main__")
        results[path] = "returned without --help's exit"
    except SystemExit as leaving:
        results[path] = "ok" if leaving.code in (0, None) and "usage:" in out.getvalue() else (
            f"exit {leaving.code!r}: {out.getvalue()[:200]!r}")
    except BaseException as error:
        results[path] = f"{type(error).__name__}: {error}"
    finally:
        signal.alarm(0)
print(json.dumps(results))
"""


def test_every_script_answers_help_without_starting_a_run():
    done = subprocess.run(
        [sys.executable, "-c", _HELP_ALL, str(BENCH), *map(str, SCRIPTS)],
        capture_output=True, text=True, timeout=600, cwd=ROOT, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert {Path(path).name: result for path, result in results.items() if result != "ok"} == {}
    assert len(results) == len(SCRIPTS)


def test_no_script_imports_another_script():
    """What scripts share lives in bench/common/, imported as ``common``; a script is never a module."""
    names = {path.stem for path in SCRIPTS}
    offenders = {}
    for path in [*SCRIPTS, *(BENCH / "common").glob("*.py")]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                    for alias in node.names}
        imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
        if imported & names:
            offenders[path.name] = sorted(imported & names)
    assert offenders == {}


def test_the_readme_indexes_every_script():
    readme = (BENCH / "README.md").read_text(encoding="utf-8")
    listed = {line.split("`")[1] for line in readme.splitlines() if line.startswith("| `")}
    assert listed == {path.name for path in SCRIPTS}
    for path in SCRIPTS:
        row = next(line for line in readme.splitlines() if line.startswith(f"| `{path.name}`"))
        assert f"bench/{path.name}" in row, f"{path.name}: the row names no command"
