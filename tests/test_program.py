"""The one driver of child programs (kernel/program/driver.py): spawn, a masked stderr tail,
the group killed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from passageway.kernel.program.driver import STDERR_QUOTED_CHARS, Masker, Program, Stderr
from tests.waiting import until

ROOT = Path(__file__).resolve().parents[1]


def test_a_secret_cut_in_half_is_masked():
    masker = Masker(["abcdef123"])
    assert masker.cut("line with abcd") == "line with ***"
    assert masker.cut("abcdef123 and abc") == "*** and ***"
    assert masker("nothing here") == "nothing here"
    assert masker.masked == 1  # whole values are counted, cut ones only masked


async def test_stderr_is_masked_logged_and_its_tail_kept():
    logged: list[str] = []
    stderr = Stderr(Masker(["hunter2"]), logged.append, tail_lines=2, max_logged=3)
    script = ("import sys\n"
              "for n in range(5): print(f'line {n} hunter2', file=sys.stderr)\n"
              "print('x' * 1000, file=sys.stderr)\n")
    program = await Program.spawn([sys.executable, "-c", script], {}, stderr, stdin=False)
    assert await program.process.wait() == 0
    await program.stderr_done()
    await program.finish()
    assert logged == ["line 0 ***", "line 1 ***", "line 2 ***", "3 more stderr lines were not logged"]
    assert list(stderr.tail) == ["line 4 ***", "x" * STDERR_QUOTED_CHARS]
    assert stderr.masker.masked == 5


async def test_a_program_gets_exactly_its_environment_and_is_killed_with_its_group():
    script = ("import json, os, subprocess, sys\n"
              "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
              "seen = {'child': child.pid, 'home': 'HOME' in os.environ, 'a': os.environ.get('A')}\n"
              "print(json.dumps(seen), flush=True)\n"
              "import time; time.sleep(60)\n")
    program = await Program.spawn([sys.executable, "-c", script], {"A": "1"},
                                  Stderr(Masker([]), lambda _text: None), stdin=False)
    assert program.process.stdout is not None
    started = json.loads(await program.process.stdout.readline())
    assert started["a"] == "1" and started["home"] is False
    await program.kill(grace=5.0)
    await program.finish()
    assert not program.running
    # The kill reached the child (it sleeps 60 s): gone within the wait, which a busy machine needs.
    await until(lambda: not alive(started["child"]), "the program's child is gone", timeout=40)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_one_driver_starts_every_child_program():
    """The connector runner and the command embedder both start their programs through
    :class:`Program`; nothing else in the kernel or the builtins spawns one."""
    spawning = sorted(
        str(path.relative_to(ROOT))
        for folder in ("kernel", "builtin") for path in (ROOT / folder).rglob("*.py")
        if "create_subprocess_exec" in path.read_text(encoding="utf-8")
    )
    assert spawning == ["kernel/program/driver.py"]
    for user in ("kernel/connector/runner.py", "builtin/embedders/embed_command.py"):
        assert "Program.spawn(" in (ROOT / user).read_text(encoding="utf-8")
