"""The connector runner against real subprocesses: good calls, and every way a connector breaks.

Each misbehaving connector in ``tests/misbehaving/`` breaks one rule on its first call (``ONCE``)
and answers well afterwards, so every case also shows that the same runner is usable again.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from passageway.kernel.config import ConnectorSettings
from passageway.kernel.connector.runner import ConnectorRunner
from passageway.kernel.errors import ConfigError, ConnectorError
from passageway.kernel.records import CheckReply, Item, ListEntry
from passageway.testing import fake_connector
from tests.sync_helpers import Setup

MISBEHAVING = Path(__file__).with_name("misbehaving")
ENVIRON = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/tmp/home-of-the-server"}


def runner_for(script: str, tmp_path: Path, *, env=None, secrets=None, environ=None, **limits):
    settings = ConnectorSettings(
        name="bad",
        command=(sys.executable, str(MISBEHAVING / script)),
        env={"ONCE": str(tmp_path / "once"), **(env or {})},
        secrets=secrets or {},
        **limits,
    )
    return ConnectorRunner(settings, environ={**ENVIRON, **(environ or {})})


def fake_runner(tmp_path: Path, records: list[dict], **env: str) -> ConnectorRunner:
    items = tmp_path / "items.json"
    items.write_text(json.dumps(records))
    settings = ConnectorSettings(
        name="fake",
        command=tuple(fake_connector.command()),
        env={"FAKE_ITEMS": str(items), **env},
    )
    return ConnectorRunner(settings, environ=ENVIRON)


def script_runner(tmp_path: Path, name: str, stderr_code: str, *, secrets=None, environ=None
                  ) -> ConnectorRunner:
    """A runner for a Python script that runs ``stderr_code``, then answers ``check`` with count 0."""
    script = tmp_path / f"{name}.py"
    script.write_text(stderr_code + "print('{\"ok\": true, \"count\": 0}')\n")
    settings = ConnectorSettings(name=name, command=(sys.executable, str(script)), secrets=secrets or {})
    return ConnectorRunner(settings, environ={**ENVIRON, **(environ or {})})


def item(item_id: str, version: str = "1", **extra) -> dict:
    return {"id": item_id, "title": item_id.title(), "url": f"https://example.invalid/{item_id}",
            "version": version, "sections": [{"heading": None, "text": f"text of {item_id}"}], **extra}


# ---------------------------------------------------------------------------------------------
# Good calls
# ---------------------------------------------------------------------------------------------


async def test_the_four_modes_return_records(tmp_path):
    runner = fake_runner(tmp_path, [
        item("a", "1", updated="2026-10-28T09:00:00Z", weight=2, path=["Ops"]),
        item("b", "7"),
    ])
    assert await runner.check() == CheckReply(ok=True, count=2, protocol="1")
    assert await runner.list() == [ListEntry("a", "1"), ListEntry("b", "7")]
    fetched = await runner.fetch(["b", "a", "gone"])
    assert [record.id for record in fetched] == ["a", "b"]
    assert isinstance(fetched[0], Item) and fetched[0].weight == 2.0 and fetched[0].path == ("Ops",)
    assert await runner.fetch([]) == []
    changed = await runner.changed(datetime(2026, 10, 1, tzinfo=UTC))
    assert [record.id for record in changed] == ["a"]
    assert await runner.changed(datetime(2026, 11, 1)) == []


async def test_fetch_sends_each_id_once_as_a_json_line(tmp_path):
    dump = tmp_path / "stdin.txt"
    script = tmp_path / "echo_stdin.py"
    script.write_text(
        "import sys, os\n"
        "data = sys.stdin.read()\n"
        "open(os.environ['DUMP'], 'w').write(data)\n"
    )
    settings = ConnectorSettings(name="echo", command=(sys.executable, str(script)), env={"DUMP": str(dump)})
    assert await ConnectorRunner(settings, environ=ENVIRON).fetch(["x", "y", "x"]) == []
    assert [json.loads(line) for line in dump.read_text().splitlines()] == [{"id": "x"}, {"id": "y"}]


async def test_environment_holds_only_the_allowed_variables(tmp_path):
    dump = tmp_path / "environment.json"
    runner = runner_for(
        "environment.py", tmp_path,
        env={"DUMP": str(dump), "FOLDER": "/notes"},
        secrets={"TOKEN": "NOTES_TOKEN"},
        environ={
            "NOTES_TOKEN": "s3cr3t-value",
            "OTHER_TOKEN": "not-for-this-connector",
            "PASSAGEWAY_LOGIN_PASSWORD": "the-server-password",
            "LANG": "C.UTF-8",
        },
    )
    await runner.check()
    seen = json.loads(dump.read_text())
    # Python itself may add LC_CTYPE when it coerces the C locale; nothing else may appear.
    seen.pop("LC_CTYPE", None)
    # The call's marker: random, a new one per call (it finds a daemon the call started).
    assert len(seen.pop("PASSAGEWAY_CALL")) == 24
    assert seen == {
        "PATH": ENVIRON["PATH"],
        "HOME": ENVIRON["HOME"],
        "PASSAGEWAY_PROTOCOL": "1",
        "ONCE": str(tmp_path / "once"),
        "DUMP": str(dump),
        "FOLDER": "/notes",
        "TOKEN": "s3cr3t-value",
    }


async def test_an_unset_secret_variable_is_a_config_error_naming_it(tmp_path):
    runner = runner_for("environment.py", tmp_path, env={"DUMP": str(tmp_path / "e.json")},
                        secrets={"TOKEN": "NOTES_TOKEN"})
    with pytest.raises(ConfigError, match="NOTES_TOKEN"):
        await runner.check()
    assert not (tmp_path / "e.json").exists()


async def test_a_missing_executable_says_what_to_do():
    settings = ConnectorSettings(name="gone", command=("no-such-connector-program", "x"))
    with pytest.raises(ConnectorError) as caught:
        await ConnectorRunner(settings, environ=ENVIRON).list()
    assert caught.value.rule == "command not found"
    assert str(caught.value) == (  # one line: the command, where it is set, what to do; said once
        "connector 'gone': command not found: no-such-connector-program (the `command` of [[connector]] "
        "'gone' in passageway.toml; connectors run with an empty environment, so give an absolute path)"
    )


async def test_calls_do_not_block_the_event_loop(tmp_path):
    # The connector answers only once a task on the loop has run three times during the call (it
    # waits for the file that task writes, and gives up after a minute): a call that blocked the
    # loop would get no answer. Turns of the loop, not seconds, so it holds on a busy machine.
    signal_file = tmp_path / "loop-ran"
    runner = script_runner(
        tmp_path, "waits_for_the_loop",
        "import os, sys, time\n"
        "for _ in range(6000):\n"
        f"    if os.path.exists({str(signal_file)!r}):\n"
        "        break\n"
        "    time.sleep(0.01)\n"
        "else:\n"
        "    sys.exit('the event loop did not run during the call')\n")
    ticks = 0

    async def tick():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.05)
            ticks += 1
            if ticks == 3:
                signal_file.write_text("ran")

    ticker = asyncio.create_task(tick())
    try:
        assert (await runner.check()).count == 0
    finally:
        ticker.cancel()
    assert ticks >= 3


# ---------------------------------------------------------------------------------------------
# Misbehaviour: every case fails the call, returns nothing, and the next call works
# ---------------------------------------------------------------------------------------------


async def expect_failure(runner: ConnectorRunner, call, rule: str, line: int | None = None) -> ConnectorError:
    with pytest.raises(ConnectorError) as caught:
        await call()
    error = caught.value
    assert error.connector == "bad"
    assert error.rule == rule
    assert f"connector 'bad': {rule}:" in str(error)
    if line is not None:
        assert f"line {line}:" in str(error)
    return error


async def test_a_line_that_is_not_json(tmp_path):
    runner = runner_for("non_json.py", tmp_path)
    error = await expect_failure(runner, runner.list, "malformed line", line=2)
    assert "hello, this is not JSON" in str(error)
    assert await runner.list() == [ListEntry("a", "1"), ListEntry("b", "2")]


async def test_a_record_without_title(tmp_path):
    runner = runner_for("missing_title.py", tmp_path)
    error = await expect_failure(runner, lambda: runner.fetch(["a"]), "invalid record", line=1)
    assert "title" in str(error)
    assert [record.title for record in await runner.fetch(["a"])] == ["Alpha"]


async def test_a_line_over_max_line_bytes(tmp_path):
    runner = runner_for("long_line.py", tmp_path)
    started = time.monotonic()
    error = await expect_failure(runner, runner.list, "line too long", line=1)
    assert "max_line_bytes" in str(error)
    assert len(str(error)) < 600  # an excerpt, not the line
    assert time.monotonic() - started < 60  # a fraction of a second on a quiet machine
    assert len(await runner.list()) == 2


async def test_output_over_max_output_bytes_stops_early(tmp_path, caplog):
    # A limit of 8 MiB of the 200 MiB the connector writes: reading stops there and the process
    # is killed. (The default, 64 MiB, took 5 s alone and 15 s under load to read and parse: the
    # test then timed its own parsing more than the stop.)
    # The connector marks the end of its writing in a file: a reader that stops early and kills
    # it leaves no mark (the connector blocks on a full pipe first), one that reads it all does.
    finished = tmp_path / "finished"
    runner = runner_for("huge_output.py", tmp_path, max_output_bytes=8 * 1024 * 1024,
                        env={"FINISHED_FILE": str(finished)})
    with caplog.at_level(logging.WARNING, logger="passageway.program"):
        error = await expect_failure(runner, runner.list, "output too large")
    assert "max_output_bytes" in str(error)
    assert not finished.exists(), "the connector wrote all 200 MiB: reading did not stop early"
    # What it wrote and no one read is dropped once it is killed: no pipe is left "held open"
    # (that wait used to run out its 5 s grace, with a warning about a process that did not exist).
    assert "holds its output open" not in caplog.text
    assert len(await runner.list()) == 2


def process_is_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie waiting for init to reap it is dead too
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return True


async def test_a_timeout_kills_the_connector_and_its_child(tmp_path):
    pid_file = tmp_path / "child.pid"
    runner = runner_for("sleeper.py", tmp_path, env={"CHILD_PID_FILE": str(pid_file)}, timeout=1.0)
    started = time.monotonic()
    error = await expect_failure(runner, runner.list, "timeout")
    assert time.monotonic() - started < 60  # about 1 s; the connector and its child sleep 120 s
    assert "1 s" in str(error)
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 30
    while not process_is_gone(child) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert process_is_gone(child), f"the connector's child {child} survived the timeout"
    assert len(await runner.list()) == 2


async def test_a_child_that_left_the_process_group_is_killed_too(tmp_path):
    pid_file = tmp_path / "child.pid"
    runner = runner_for(
        "sleeper.py", tmp_path, env={"CHILD_PID_FILE": str(pid_file), "NEW_SESSION": "1"}, timeout=1.0
    )
    started = time.monotonic()
    await expect_failure(runner, runner.list, "timeout")
    assert time.monotonic() - started < 60  # no wait for the pipe the child held open (120 s)
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 30
    while not process_is_gone(child) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert process_is_gone(child), f"the connector's child {child} in its own session survived"


async def test_a_non_zero_exit_after_valid_records(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="passageway.connector")
    runner = runner_for("exits_one.py", tmp_path)
    error = await expect_failure(runner, runner.list, "exit status")
    assert "status 1" in str(error)
    assert "its last line on stderr: lost the connection half-way" in str(error)
    assert "lost the connection half-way" in caplog.text
    assert len(await runner.list()) == 2


async def test_an_id_that_was_not_requested(tmp_path):
    runner = runner_for("unrequested.py", tmp_path)
    error = await expect_failure(runner, lambda: runner.fetch(["a"]), "unrequested id", line=2)
    assert "'b'" in str(error)
    assert [record.id for record in await runner.fetch(["a"])] == ["a"]


async def test_the_same_id_twice(tmp_path):
    runner = runner_for("duplicate.py", tmp_path)
    error = await expect_failure(runner, runner.list, "duplicate id", line=2)
    assert "line 1" in str(error)
    assert len(await runner.list()) == 2


async def test_a_secret_on_stderr_is_masked_in_the_log_and_the_error(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="passageway.connector")
    runner = runner_for("secret_stderr.py", tmp_path, secrets={"TOKEN": "NOTES_TOKEN"},
                        environ={"NOTES_TOKEN": "tok-9f8e7d6c"})
    error = await expect_failure(runner, runner.check, "malformed line", line=1)
    assert "tok-9f8e7d6c" not in str(error)
    assert "not json ***" in str(error)
    assert "tok-9f8e7d6c" not in caplog.text
    assert "login failed with token ***" in caplog.text
    assert "printed a secret value on stderr" in caplog.text
    assert (await runner.check()).count == 2


async def test_another_protocol_version_is_refused(tmp_path):
    runner = runner_for("protocol_two.py", tmp_path)
    error = await expect_failure(runner, runner.check, "protocol version", line=1)
    assert "speaks protocol 2" in str(error) and "speaks protocol 1" in str(error)
    assert (await runner.check()).protocol == "1"


async def test_a_sync_refuses_another_protocol_version_by_the_runners_one_check(tmp_path):
    runner = runner_for("protocol_two.py", tmp_path)
    async with Setup(tmp_path, runner, "bad") as sync:
        with pytest.raises(ConnectorError, match="protocol version") as raised:
            await sync.sync_once()
        assert "use a version of the connector made for protocol 1" in str(raised.value)
        assert sync.health().state == "failing" and sync.health().items == 0


def test_the_connector_protocol_version_is_compared_in_one_place():
    kernel = Path(__file__).parent.parent / "kernel"
    places = [path.relative_to(kernel).as_posix() for path in sorted(kernel.rglob("*.py"))
              for line in path.read_text(encoding="utf-8").splitlines()
              if "= PROTOCOL_VERSION" in line and ("!=" in line or "==" in line)]
    assert places == ["connector/lines.py"]


async def test_check_must_print_one_line(tmp_path):
    runner = fake_runner(tmp_path, [])
    script = tmp_path / "silent.py"
    script.write_text("")
    runner = ConnectorRunner(
        ConnectorSettings(name="bad", command=(sys.executable, str(script))), environ=ENVIRON
    )
    await expect_failure(runner, runner.check, "check reply")


async def test_a_cancelled_call_kills_the_process_group(tmp_path):
    pid_file = tmp_path / "child.pid"
    runner = runner_for("sleeper.py", tmp_path, env={"CHILD_PID_FILE": str(pid_file)}, timeout=60.0)
    task = asyncio.create_task(runner.list())
    deadline = time.monotonic() + 60
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 30
    while not process_is_gone(child) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert process_is_gone(child)


async def test_long_and_many_stderr_lines_are_cut_and_capped(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="passageway.connector")
    runner = script_runner(
        tmp_path, "noisy",
        "import os, sys\n"
        "token = os.environ['TOKEN']\n"
        "sys.stderr.write('x' * 8180 + token + 'y' * 100000 + '\\n')\n"
        "for n in range(1500):\n"
        "    sys.stderr.write(f'note {n}\\n')\n",
        secrets={"TOKEN": "NOISY_TOKEN"}, environ={"NOISY_TOKEN": "tok-1234567890abcdef"},
    )
    assert (await runner.check()).count == 0
    messages = [record.getMessage() for record in caplog.records]
    assert not any("tok-12" in message for message in messages)
    cut = next(message for message in messages if "[line cut]" in message)
    assert len(cut) < 2100
    assert any("note 998" in message for message in messages)
    assert not any("note 1499" in message for message in messages)
    assert any("501 more stderr lines were not logged" in message for message in messages)


# ---------------------------------------------------------------------------------------------
# The fake connector's switches, which the sync tests rely on
# ---------------------------------------------------------------------------------------------


async def test_fake_fail_fails_a_mode_or_only_a_batch_with_an_id(tmp_path):
    runner = fake_runner(tmp_path, [item("a"), item("b")], FAKE_FAIL="fetch:b,changed")
    assert [record.id for record in await runner.fetch(["a"])] == ["a"]
    with pytest.raises(ConnectorError) as caught:
        await runner.fetch(["a", "b"])
    assert caught.value.rule == "exit status" and "FAKE_FAIL" in str(caught.value)
    with pytest.raises(ConnectorError):
        await runner.changed(datetime(2020, 1, 1, tzinfo=UTC))
    assert len(await runner.list()) == 2


async def test_fake_sleep_for_one_mode_runs_into_the_timeout(tmp_path):
    items = tmp_path / "items.json"
    items.write_text(json.dumps([item("a")]))
    settings = ConnectorSettings(
        name="fake", command=(sys.executable, "-m", "passageway.testing.fake_connector"),
        env={"FAKE_ITEMS": str(items), "FAKE_SLEEP": "fetch:30"}, timeout=1.0,
    )
    runner = ConnectorRunner(settings, environ=ENVIRON)
    assert len(await runner.list()) == 1
    started = time.monotonic()
    with pytest.raises(ConnectorError) as caught:
        await runner.fetch(["a"])
    assert caught.value.rule == "timeout" and time.monotonic() - started < 20  # about 1 s; the fake: 30 s


async def test_the_fake_reads_its_file_on_every_call(tmp_path):
    runner = fake_runner(tmp_path, [item("a", "1")])
    assert await runner.list() == [ListEntry("a", "1")]
    (tmp_path / "items.json").write_text(json.dumps([item("a", "2"), item("c", "1")]))
    assert await runner.list() == [ListEntry("a", "2"), ListEntry("c", "1")]


async def test_the_fake_serves_records_unchecked_so_the_runner_catches_them(tmp_path):
    runner = fake_runner(tmp_path, [{"id": "a", "version": "1", "title": ""}])
    with pytest.raises(ConnectorError) as caught:
        await runner.fetch(["a"])
    assert caught.value.rule == "invalid record"


# ---------------------------------------------------------------------------------------------
# Found by the hostile probe (issue 22)
# ---------------------------------------------------------------------------------------------

async def test_a_lone_surrogate_in_text_is_repaired_and_the_rest_of_the_call_kept(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="passageway.connector")
    bad = item("b", sections=[{"heading": "half \ud800", "text": "a pair \ud83d\ude00 and one alone \udfff"}])
    runner = fake_runner(tmp_path, [item("a"), bad, item("c")])
    items = await runner.fetch(["a", "b", "c"])
    assert [entry.id for entry in items] == ["a", "b", "c"]
    repaired = items[1].sections[0]
    assert repaired.heading == "half \ufffd"
    assert repaired.text == "a pair \U0001f600 and one alone \ufffd"
    repaired.text.encode("utf-8")  # storable, embeddable and digestible
    assert "2 lone surrogate escape(s)" in caplog.text and "'b'" in caplog.text


async def test_a_lone_surrogate_in_an_id_leaves_out_that_record_alone(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="passageway.connector")
    runner = fake_runner(tmp_path, [item("a"), item("b\udc80"), item("c")])
    entries = await runner.list()
    assert [entry.id for entry in entries] == ["a", "c"]
    assert "left out" in caplog.text


async def test_a_long_stderr_line_that_arrives_whole_is_cut(tmp_path, caplog):
    # Lines of 20 KB fit three to a 64 KiB read, so they used to reach the log whole: 20 MB of
    # log from one call against a bound of about 2 MB.
    caplog.set_level(logging.INFO, logger="passageway.connector")
    runner = script_runner(tmp_path, "chatty", "import sys\n"
                           "for n in range(1000):\n"
                           "    sys.stderr.write(f'{n} ' + 'z' * 20_000 + '\\n')\n")
    assert (await runner.check()).count == 0
    logged = sum(len(record.getMessage()) for record in caplog.records)
    assert logged < 2_200_000
    assert sum("[line cut]" in record.getMessage() for record in caplog.records) == 1000


async def test_a_shell_connector_sees_only_the_documented_environment(tmp_path):
    # A Python connector also finds LC_CTYPE=C.UTF-8: its own interpreter sets it when it starts in
    # the C locale (PEP 538); docs/connector-protocol.md says so. passageway passes nothing else.
    dump = tmp_path / "env.txt"
    script = tmp_path / "env.sh"
    script.write_text(f"#!/bin/sh\nenv > {dump}\necho '{{\"ok\": true, \"count\": 0}}'\n")
    script.chmod(0o755)
    settings = ConnectorSettings(name="shell", command=("/bin/sh", str(script)), env={"FOLDER": "/x"})
    runner = ConnectorRunner(settings, environ={**ENVIRON, "LC_CTYPE": "C.UTF-8", "LANG": "de_DE.UTF-8"})
    await runner.check()
    names = {line.split("=", 1)[0] for line in dump.read_text().splitlines() if "=" in line}
    assert names - {"PWD", "SHLVL", "_"} == {"PATH", "HOME", "PASSAGEWAY_PROTOCOL", "PASSAGEWAY_CALL",
                                              "FOLDER"}


async def test_a_line_nested_200000_deep_is_a_malformed_line_not_a_recursion_error(tmp_path):
    # Issue 32.2: json's RecursionError escaped the runner and stopped the whole sync.
    script = tmp_path / "deep.py"
    script.write_text("import sys\nprint('{\"id\": \"a\", \"version\": \"1\"}')\n"
                      "print('{\"id\": \"b\", \"version\": ' + '[' * 200000 + ']' * 200000 + '}')\n")
    runner = ConnectorRunner(ConnectorSettings(name="deep", command=(sys.executable, str(script))),
                             environ=ENVIRON)
    with pytest.raises(ConnectorError) as caught:
        await runner.list()
    assert caught.value.rule == "malformed line"
    assert "line 2:" in str(caught.value) and "nested too deep" in str(caught.value)
    assert len(str(caught.value)) < 600


async def test_a_lone_surrogate_in_a_version_is_repaired_and_an_id_is_reported(tmp_path, caplog):
    # Issue 32.13: a list entry whose version held one was dropped silently, the source left ok.
    caplog.set_level(logging.WARNING, logger="passageway.connector")
    runner = fake_runner(tmp_path, [item("a", "1\udc80"), item("b\udc80"), item("c")])
    entries = await runner.list()
    assert entries == [ListEntry("a", "1\ufffd"), ListEntry("c", "1")]
    assert [entry.version for entry in await runner.fetch(["a"])] == ["1\ufffd"]  # as listed
    await runner.list()
    assert len(runner.left_out) == 1 and "'b\ufffd'" in runner.left_out[0]
    await runner.check()
    assert runner.left_out == []  # each call reports its own


def test_running_out_of_file_descriptors_is_said_as_such(tmp_path):
    # Issue 32.13: it was reported as "command not found".
    script = tmp_path / "exhaust.py"
    script.write_text(f"""
import asyncio, resource, sys
from passageway.kernel.config import ConnectorSettings
from passageway.kernel.connector.runner import ConnectorRunner
from passageway.kernel.errors import ConnectorError
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
held = []
try:
    while True:
        held.append(open({str(tmp_path / 'x')!r}, "w"))
except OSError:
    for _ in range(4):
        held.pop().close()  # three for the event loop itself, one too few for a call's pipes
runner = ConnectorRunner(ConnectorSettings(name="any", command=(sys.executable, "-c", "pass")),
                         environ={{"PATH": "/usr/bin:/bin"}})
try:
    asyncio.run(runner.check())
except ConnectorError as error:
    print(error.rule, "|", error)
""")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.stdout.startswith("out of file descriptors |"), done.stdout + done.stderr
    assert "LimitNOFILE" in done.stdout and "command not found" not in done.stdout


async def test_a_daemon_started_by_a_call_that_succeeded_ends_with_the_call(tmp_path, caplog):
    # Issue 32.13: a double fork with setsid left a process of the connector running for good.
    pid_file = tmp_path / "daemon.pid"
    script = tmp_path / "daemonise.py"
    script.write_text(f"""
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for stream in (0, 1, 2):
            os.close(stream)
        with open({str(pid_file)!r} + ".tmp", "w") as handle:
            handle.write(str(os.getpid()))
        os.rename({str(pid_file)!r} + ".tmp", {str(pid_file)!r})
        time.sleep(120)
    os._exit(0)
os.wait()
while not os.path.exists({str(pid_file)!r}):
    time.sleep(0.01)
print('{{"ok": true, "count": 0}}')
""")
    caplog.set_level(logging.WARNING, logger="passageway.connector")
    runner = ConnectorRunner(ConnectorSettings(name="daemon", command=(sys.executable, str(script))),
                             environ=ENVIRON)
    assert (await runner.check()).count == 0
    daemon = int(pid_file.read_text())
    deadline = time.monotonic() + 30
    while not process_is_gone(daemon) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert process_is_gone(daemon), f"the daemon {daemon} outlived the call"
    assert "left 1 process(es) running" in caplog.text
