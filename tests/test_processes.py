"""kill_tree: a program, its process group and a descendant that started a session of its own."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from passageway.kernel.program.processes import descendants, kill_tree

PARENT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
print(child.pid, flush=True)
time.sleep(60)
"""


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


def test_kill_tree_reaches_a_child_in_its_own_session():
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        child = int(parent.stdout.readline())
        assert child in descendants(parent.pid)
        kill_tree(parent.pid)
        parent.wait(timeout=5)
        deadline = time.monotonic() + 30
        while not gone(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gone(child), f"the child {child} in a session of its own survived"
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()


def test_a_process_without_children_has_no_descendants():
    assert descendants(2**22 + 12345) == []  # no such process
