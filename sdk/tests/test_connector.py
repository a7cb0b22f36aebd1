"""The Connector base class: dispatch, all-or-nothing output, exit codes, validation."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import ClassVar

import pytest
from passageway_sdk import Connector, SettingsError, SourceError, parse_since

GUIDE_EXAMPLE = Path(__file__).with_name("folder_sdk.py")


def record(item_id: str, text: str = "Some text.", **extra):
    return {"id": item_id, "title": f"Title of {item_id}", "url": f"https://example.org/{item_id}",
            "version": "v1", "sections": [{"heading": None, "text": text}], **extra}


class Memory(Connector):
    """A connector over a dict, with knobs for the failure paths."""

    name = "memory connector"

    def __init__(self, env, items=None, fail_with=None, fail_after=0):
        if env.get("BROKEN"):
            raise SettingsError("BROKEN is set; unset it")
        self.items = {"a": record("a"), "b": record("b")} if items is None else items
        self.fail_with = fail_with
        self.fail_after = fail_after
        self.requested = None

    def versions(self):
        return {item_id: item["version"] for item_id, item in self.items.items()}

    def fetch(self, ids):
        self.requested = list(ids)
        for position, item_id in enumerate(ids):
            if self.fail_with is not None and position >= self.fail_after:
                raise self.fail_with
            if item_id in self.items:
                yield self.items[item_id]


class WithChanged(Memory):
    seen_since: ClassVar[list[datetime]] = []

    def changed(self, since):
        WithChanged.seen_since.append(since)
        return [self.items["a"]]


def call(cls, *argv, env=None, stdin="", **options):
    out, err = io.StringIO(), io.StringIO()
    code = cls.run(list(argv), env or {}, io.StringIO(stdin), out, err, **options)
    return code, out.getvalue(), err.getvalue()


def lines(output: str):
    return [json.loads(line) for line in output.splitlines()]


# ---------------------------------------------------------------------------------------------
# Dispatch
# ---------------------------------------------------------------------------------------------


def test_check_prints_count_and_protocol():
    code, out, err = call(Memory, "check")
    assert (code, err) == (0, "")
    assert out == '{"ok": true, "count": 2, "protocol": "1"}\n'


def test_check_uses_count_when_overridden():
    class Counted(Memory):
        def count(self):
            return 41

        def versions(self):
            raise AssertionError("check must not list when count() is given")

    code, out, _ = call(Counted, "check")
    assert code == 0 and lines(out) == [{"ok": True, "count": 41, "protocol": "1"}]


def test_list_prints_every_version():
    code, out, _ = call(Memory, "list")
    assert code == 0
    assert lines(out) == [{"id": "a", "version": "v1"}, {"id": "b", "version": "v1"}]


def test_fetch_reads_ids_skips_blank_lines_and_missing_items():
    stdin = '\n{"id": "b"}\n   \n{"id": "gone"}\n{"id": "a"}\n{"id": "b"}\n'
    out, err = io.StringIO(), io.StringIO()
    instances = []

    class Spy(Memory):
        def __init__(self, env, **options):
            super().__init__(env, **options)
            instances.append(self)

    code = Spy.run(["fetch"], {}, io.StringIO(stdin), out, err)
    assert (code, err.getvalue()) == (0, "")
    assert [item["id"] for item in lines(out.getvalue())] == ["b", "a"]
    assert instances[0].requested == ["b", "gone", "a"]  # in order, each once


def test_fetch_with_no_ids_prints_nothing():
    assert call(Memory, "fetch", stdin="") == (0, "", "")


def test_changed_without_implementation_prints_nothing():
    assert call(Memory, "changed", "--since", "2026-10-28T09:00:00Z") == (0, "", "")
    assert call(Memory, "changed") == (0, "", "")


def test_changed_gets_an_aware_utc_time():
    WithChanged.seen_since.clear()
    code, out, _ = call(WithChanged, "changed", "--since", "2026-10-28T11:00:00+02:00")
    assert code == 0 and [item["id"] for item in lines(out)] == ["a"]
    code, _, _ = call(WithChanged, "changed", "--since=2026-10-28T09:00:00")
    assert code == 0
    expected = datetime(2026, 10, 28, 9, 0, tzinfo=UTC)
    assert WithChanged.seen_since == [expected, expected]
    assert all(since.utcoffset() == timedelta(0) for since in WithChanged.seen_since)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["lst"],
        ["list", "extra"],
        ["changed", "--since", "yesterday"],
        ["changed", "--since"],
        ["changed", "--since", "2026-10-28", "more"],
    ],
)
def test_a_wrong_call_exits_2_with_usage(argv):
    code, out, err = call(WithChanged, *argv)
    assert code == 2 and out == ""
    assert err.startswith("memory connector: ")
    assert "usage: <connector> check | list | fetch" in err


def test_changed_needs_since_when_implemented():
    code, out, err = call(WithChanged, "changed")
    assert (code, out) == (2, "")
    assert "changed needs --since" in err


def test_parse_since_accepts_iso_forms_and_refuses_others():
    assert parse_since("2026-10-28T09:00:00Z") == datetime(2026, 10, 28, 9, tzinfo=UTC)
    assert parse_since("2026-10-28") == datetime(2026, 10, 28, tzinfo=UTC)
    moment = parse_since("2026-10-28T10:00:00+01:00")
    assert moment == datetime(2026, 10, 28, 9, tzinfo=UTC) and moment.tzinfo == UTC
    with pytest.raises(ValueError, match="not an ISO 8601 time"):
        parse_since("last tuesday")


def test_bad_stdin_lines_exit_2():
    for stdin, expected in [("not json\n", "line 1 is not JSON"), ('\n{"name": "a"}\n', "line 2"),
                            ('{"id": ""}\n', "not a fetch request")]:
        code, out, err = call(Memory, "fetch", stdin=stdin)
        assert (code, out) == (2, ""), stdin
        assert expected in err


def test_another_protocol_version_is_refused():
    code, out, err = call(Memory, "list", env={"PASSAGEWAY_PROTOCOL": "2"})
    assert (code, out) == (2, "")
    assert "protocol '2'" in err
    assert call(Memory, "list", env={"PASSAGEWAY_PROTOCOL": "1"})[0] == 0


def test_options_reach_init():
    code, out, _ = call(Memory, "list", items={"only": record("only")})
    assert code == 0 and lines(out) == [{"id": "only", "version": "v1"}]


# ---------------------------------------------------------------------------------------------
# Errors and all-or-nothing output
# ---------------------------------------------------------------------------------------------


def test_settings_error_exits_2_without_traceback():
    code, out, err = call(Memory, "list", env={"BROKEN": "1"})
    assert (code, out, err) == (2, "", "memory connector: BROKEN is set; unset it\n")


def test_source_error_after_some_items_prints_nothing():
    stdin = '{"id": "a"}\n{"id": "b"}\n'
    code, out, err = call(Memory, "fetch", stdin=stdin, fail_with=SourceError("the wiki answered 503"),
                          fail_after=1)
    assert (code, out, err) == (1, "", "memory connector: the wiki answered 503\n")


def test_expected_errors_exit_1_with_the_message():
    class Flaky(Memory):
        expected_errors = (ConnectionError,)

    code, out, err = call(Flaky, "fetch", stdin='{"id": "a"}\n', fail_with=ConnectionError("refused"))
    assert (code, out, err) == (1, "", "memory connector: refused\n")


def test_other_exceptions_propagate_and_print_nothing():
    out = io.StringIO()
    with pytest.raises(ZeroDivisionError):
        Memory.run(["fetch"], {}, io.StringIO('{"id": "a"}\n'), out, io.StringIO(),
                   fail_with=ZeroDivisionError("bug"))
    assert out.getvalue() == ""


def test_a_bug_exits_1_with_a_traceback_and_empty_stdout(tmp_path):
    script = tmp_path / "buggy.py"
    script.write_text(textwrap.dedent("""
        from passageway_sdk import Connector

        class Buggy(Connector):
            name = "buggy connector"
            def versions(self):
                return {"a": "1"} | {"b": 1 / 0}
            def fetch(self, ids):
                return []

        Buggy.main()
    """))
    result = subprocess.run([sys.executable, str(script), "list"], capture_output=True, text=True,
                            env={"PATH": os.environ.get("PATH", "")}, timeout=60)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "Traceback" in result.stderr and "ZeroDivisionError" in result.stderr


@pytest.mark.parametrize(
    ("items", "stdin", "expected"),
    [
        ({"a": record("a"), "b": {**record("b"), "title": ""}}, '{"id": "a"}\n{"id": "b"}\n',
         "the item 'b' breaks the connector protocol: title:"),
        ({"a": record("a"), "b": {key: value for key, value in record("b").items() if key != "url"}},
         '{"id": "a"}\n{"id": "b"}\n', "'url' is a required property"),
        ({"a": record("a", weight=11)}, '{"id": "a"}\n', "weight: 11 is more than the maximum"),
        ({"a": record("a", labels={"x"})}, '{"id": "a"}\n', "cannot be written as JSON"),
        ({"a": record("a", body="x")}, '{"id": "a"}\n', "'body' is not an allowed property"),
    ],
)
def test_an_invalid_item_exits_1_and_names_the_problem(items, stdin, expected):
    code, out, err = call(Memory, "fetch", stdin=stdin, items=items)
    assert (code, out) == (1, "")
    assert expected in err
    assert "Traceback" not in err


def test_an_item_returned_twice_or_unrequested_fails():
    class Twice(Memory):
        def fetch(self, ids):
            yield record("a")
            yield record("a")

    class Extra(Memory):
        def fetch(self, ids):
            yield record("a")
            yield record("secret")

    code, out, err = call(Twice, "fetch", stdin='{"id": "a"}\n')
    assert (code, out) == (1, "") and "returned twice" in err
    code, out, err = call(Extra, "fetch", stdin='{"id": "a"}\n')
    assert (code, out) == (1, "") and "'secret' was returned but not requested" in err


def test_changed_returning_one_item_twice_fails():
    class Repeats(Memory):
        def changed(self, since):
            return [record("a"), record("a")]

    code, out, err = call(Repeats, "changed", "--since", "2026-10-28T09:00:00Z")
    assert (code, out) == (1, "") and "returned twice" in err


def test_list_checks_its_entries():
    class EmptyVersion(Memory):
        def versions(self):
            return {"a": "1", "b": ""}

    class NotADict(Memory):
        def versions(self):
            return [("a", "1")]

    code, out, err = call(EmptyVersion, "list")
    assert (code, out) == (1, "") and "the list entry 'b' breaks the connector protocol: version:" in err
    code, out, err = call(NotADict, "list")
    assert (code, out) == (1, "") and "must return a dict" in err


def test_check_refuses_a_count_that_is_not_a_number():
    class Odd(Memory):
        def count(self):
            return "many"

    code, out, err = call(Odd, "check")
    assert (code, out) == (1, "") and "count:" in err


def test_output_is_ascii_and_round_trips():
    items = {"ä": record("ä", text="Grüße – 東京 😀")}
    code, out, _ = call(Memory, "fetch", stdin='{"id": "ä"}\n', items=items)
    assert code == 0
    assert out.isascii()
    assert lines(out) == [items["ä"]]


def test_warn_goes_to_stderr_and_the_call_succeeds():
    class Warns(Memory):
        def __init__(self, env):
            self.warn("starting with defaults")
            super().__init__(env)

        def versions(self):
            self.warn("skipped x.bin: binary")
            return super().versions()

    code, out, err = call(Warns, "list")
    assert code == 0 and len(lines(out)) == 2
    assert err == ("memory connector: warning: starting with defaults\n"
                   "memory connector: warning: skipped x.bin: binary\n")


def test_negative_offsets_are_converted():
    assert parse_since("2026-10-28T09:00:00-05:00") == datetime(2026, 10, 28, 14, tzinfo=UTC)


# ---------------------------------------------------------------------------------------------
# The guide's SDK example, as a real subprocess with the environment the core gives it
# ---------------------------------------------------------------------------------------------


def run_example(folder, *argv, stdin="", extra_env=None):
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(folder), "PASSAGEWAY_PROTOCOL": "1",
           "FOLDER": str(folder), **(extra_env or {})}
    return subprocess.run([sys.executable, str(GUIDE_EXAMPLE), *argv], input=stdin.encode("utf-8"),
                          capture_output=True, env=env, timeout=60)


def test_guide_example_answers_every_mode(tmp_path):
    (tmp_path / "a.txt").write_text("Lighthouses guide ships.\n", encoding="utf-8")
    (tmp_path / "deeper").mkdir()
    (tmp_path / "deeper" / "café.txt").write_text("Kaffee für alle.\n", encoding="utf-8")
    (tmp_path / "ignored.md").write_text("not a text file")

    check = run_example(tmp_path, "check")
    assert check.returncode == 0, check.stderr
    assert json.loads(check.stdout) == {"ok": True, "count": 2, "protocol": "1"}

    listed = run_example(tmp_path, "list")
    assert listed.returncode == 0
    versions = {entry["id"]: entry["version"] for entry in lines(listed.stdout.decode())}
    assert set(versions) == {"a.txt", "deeper/café.txt"}

    fetched = run_example(tmp_path, "fetch", stdin='{"id": "deeper/café.txt"}\n\n{"id": "gone.txt"}\n')
    assert fetched.returncode == 0, fetched.stderr
    assert fetched.stdout.isascii()
    [item] = lines(fetched.stdout.decode())
    assert item["id"] == "deeper/café.txt" and item["title"] == "café"
    assert item["version"] == versions["deeper/café.txt"]
    assert item["sections"] == [{"heading": None, "text": "Kaffee für alle.\n"}]

    changed = run_example(tmp_path, "changed", "--since", "2026-10-28T09:00:00Z")
    assert (changed.returncode, changed.stdout) == (0, b"")


def test_guide_example_refuses_a_missing_folder(tmp_path):
    result = run_example(tmp_path, "list", extra_env={"FOLDER": str(tmp_path / "missing")})
    assert result.returncode == 2
    assert result.stdout == b""
    assert result.stderr == b"folder connector: FOLDER must be an existing folder\n"
