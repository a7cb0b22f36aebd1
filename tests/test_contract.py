"""The contract check, its command and the guide's example connector, against real subprocesses."""

from __future__ import annotations

import json
import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from passageway.kernel.cli import main as cli_main
from passageway.testing import fake_connector
from passageway.testing.contract import RULES, Connector, check_connector, check_connector_async, run_contract

ROOT = Path(__file__).resolve().parent.parent
MISBEHAVING = ROOT / "tests" / "misbehaving"
EXAMPLE = ROOT / "docs" / "examples" / "folder_connector.py"
GUIDE = ROOT / "docs" / "write-a-connector.md"


def item(item_id: str, version: str = "1", **extra) -> dict:
    return {"id": item_id, "title": item_id.title(), "url": "", "version": version,
            "sections": [{"heading": None, "text": f"text of {item_id}"}], **extra}


def fake(tmp_path: Path, records: list[dict], **env: str) -> Connector:
    path = tmp_path / "items.json"
    path.write_text(json.dumps(records))
    return Connector("fake", fake_connector.command(), env={"FAKE_ITEMS": str(path), **env})


def breaker(broken: str = "") -> Connector:
    return Connector("breaker", [sys.executable, str(MISBEHAVING / "contract_breaker.py")],
                     env={"BREAK": broken}, secrets={"TOKEN": "tok-contract-1234"})


def test_the_fake_connector_passes_every_rule(tmp_path):
    records = [item(f"id-{n}", str(n), updated="2026-10-28T09:00:00Z") for n in range(60)]
    report = check_connector(fake(tmp_path, records))
    assert [result.rule for result in report.results] == list(RULES)
    assert {result.status for result in report.results} == {"pass"}
    # 60 ids need two fetch calls of at most 50
    fetch = next(r for r in report.results if r.rule == "fetch returns every listed item")
    assert "in 2 calls" in fetch.detail


def test_a_connector_that_keeps_the_rules_passes(tmp_path):
    report = check_connector(breaker())
    assert report.passed and report.status("changed answers") == "pass"


@pytest.mark.parametrize(("broken", "rule"), [
    ("unstable-version", "list is stable"),
    ("lost-items", "fetch returns every listed item"),
    ("version-mismatch", "fetched versions match the listing"),
    ("ignores-request", "fetch returns only requested ids"),
    ("prints-then-fails", "a failure leaves stdout empty"),
    ("leaks-secrets", "no secret in the output"),
    ("changed-stranger", "changed answers"),
    ("not-unicode", "text is UTF-8"),
    ("deep-record", "fetch returns every listed item"),
])
def test_each_broken_rule_is_named(broken, rule):
    with pytest.raises(AssertionError) as caught:
        check_connector(breaker(broken))
    report = str(caught.value)
    assert re.search(rf"FAIL  {re.escape(rule)}:", report), report
    assert "tok-contract-1234" not in report
    # The report lists every rule, so a reader sees what still passes.
    for other in RULES:
        assert other in report


def test_a_leaked_secret_is_named_by_its_variable_not_its_value():
    report = run_contract(breaker("leaks-secrets"))
    detail = next(r.detail for r in report.results if r.rule == "no secret in the output")
    assert "stderr" in detail and ("TOKEN" in detail or "CANARY" in detail)
    assert "tok-contract-1234" not in report.render()


def test_a_failing_source_is_reported_with_its_stderr(tmp_path):
    report = run_contract(fake(tmp_path, [item("a")], FAKE_FAIL="list"))
    assert report.failed_rules[:1] == ["list answers"]
    assert "FAKE_FAIL" in report.render()
    assert report.status("list is stable") == "skip"


def test_a_connector_that_accepts_garbage_skips_the_failure_rule(tmp_path):
    script = tmp_path / "lenient.py"
    script.write_text(
        "import json, sys\n"
        "mode = sys.argv[1]\n"
        "if mode == 'check': print(json.dumps({'ok': True, 'count': 0}))\n"
        "if mode == 'fetch': sys.stdin.read()\n"
    )
    report = check_connector(Connector("lenient", [sys.executable, str(script)]))
    assert report.status("a failure leaves stdout empty") == "skip"
    assert report.status("fetch returns only requested ids") == "skip"


async def test_the_check_runs_inside_an_event_loop(tmp_path):
    connector = fake(tmp_path, [item("a")])
    assert (await check_connector_async(connector)).passed
    assert run_contract(connector).passed  # the synchronous form, from a running loop


# ---------------------------------------------------------------------------------------------
# The guide's example and the command
# ---------------------------------------------------------------------------------------------


def test_the_guides_test_snippet_is_the_example_test_and_passes(tmp_path):
    example_test = EXAMPLE.with_name("test_folder_connector.py")
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S)
    assert example_test.read_text() in blocks, "the guide's test snippet differs from docs/examples"
    namespace = runpy.run_path(str(example_test))
    namespace["test_folder_connector"](tmp_path)


def test_the_example_runs_as_a_plain_script(tmp_path):
    (tmp_path / "a.txt").write_text("Lighthouses guide ships.")
    environment = {"PATH": os.environ["PATH"], "FOLDER": str(tmp_path)}
    listed = subprocess.run(["python3", str(EXAMPLE), "list"], env=environment, capture_output=True,
                            text=True, check=True)
    assert [json.loads(line)["id"] for line in listed.stdout.splitlines()] == ["a.txt"]
    fetched = subprocess.run(["python3", str(EXAMPLE), "fetch"], env=environment, input='{"id": "a.txt"}\n',
                             capture_output=True, text=True, check=True)
    record = json.loads(fetched.stdout)
    assert record["sections"][0]["text"] == "Lighthouses guide ships."


def run_cli(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "passageway.kernel.cli", *arguments],
                          capture_output=True, text=True, timeout=120)


def test_the_command_passes_the_example(tmp_path):
    (tmp_path / "a.txt").write_text("Lighthouses guide ships.")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_text("Fog horns warn them.")
    done = run_cli("check-connector", "--env", f"FOLDER={tmp_path}", "--", "python3", str(EXAMPLE))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "11 passed, 0 failed" in done.stdout


def test_the_command_names_the_broken_rule_and_exits_1():
    done = run_cli("check-connector", "--env", "BREAK=version-mismatch", "--",
                   sys.executable, str(MISBEHAVING / "contract_breaker.py"))
    assert done.returncode == 1
    assert "FAIL  fetched versions match the listing" in done.stdout
    assert "FAILED: fetched versions match the listing" in done.stdout


def test_the_command_reads_secrets_from_the_shell_by_name(monkeypatch, capsys):
    monkeypatch.setenv("MY_TOKEN", "tok-from-the-shell-42")
    code = cli_main(["check-connector", "--secret", "TOKEN=MY_TOKEN", "--env", "BREAK=leaks-secrets",
                     "--", sys.executable, str(MISBEHAVING / "contract_breaker.py")])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL  no secret in the output" in out
    assert "tok-from-the-shell-42" not in out


@pytest.mark.parametrize("arguments", [
    ["check-connector"],
    ["check-connector", "--env", "NOEQUALS", "--", "true"],
    ["check-connector", "--secret", "TOKEN=SURELY_UNSET_VARIABLE_XYZ", "--", "true"],
    ["check-connector", "--timeout", "0", "--", "true"],
])
def test_usage_errors_exit_2(arguments, capsys):
    assert cli_main(arguments) == 2
    assert "passageway:" in capsys.readouterr().err


def test_a_missing_program_is_one_line_not_one_per_rule(capsys):
    assert cli_main(["check-connector", "--", "no-such-connector-program-xyz", "arg"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "passageway: check-connector: command not found: no-such-connector-program-xyz "
        "(the program after --; connectors run with an empty environment, so give an absolute path)\n"
    )


def test_a_record_nested_200000_deep_is_a_failed_rule_not_a_crash(capsys):
    # Issue 32.2: it raised an unhandled RecursionError, in the server and in check-connector.
    code = cli_main(["check-connector", "--env", "BREAK=deep-record", "--",
                     sys.executable, str(MISBEHAVING / "contract_breaker.py")])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL  fetch returns every listed item" in out and "nested too deep" in out


def test_the_command_accepts_sections_with_anchors_and_names_a_bad_one(tmp_path, capsys):
    good = [item("guide", sections=[{"heading": "Install", "text": "Run it.", "anchor": "install"},
                                    {"heading": "Über uns", "text": "Wir.", "anchor": "über-uns"}])]
    (tmp_path / "good.json").write_text(json.dumps(good))
    code = cli_main(["check-connector", "--env", f"FAKE_ITEMS={tmp_path / 'good.json'}", "--",
                     *fake_connector.command()])
    assert code == 0, capsys.readouterr().out
    capsys.readouterr()
    bad = [item("guide", sections=[{"heading": "Install", "text": "Run it.", "anchor": "#install me"}])]
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    code = cli_main(["check-connector", "--env", f"FAKE_ITEMS={tmp_path / 'bad.json'}", "--",
                     *fake_connector.command()])
    out = capsys.readouterr().out
    assert code == 1
    [line] = [line for line in out.splitlines() if line.strip().startswith("FAIL  fetch returns every")]
    assert ("item 'guide' is not valid: sections/0/anchor: '#install me' is not a heading id: give the id "
            "without '#', with no spaces") in line


def test_the_command_prints_json(capsys):
    code = cli_main(["check-connector", "--json", "--env", "BREAK=version-mismatch", "--",
                     sys.executable, str(MISBEHAVING / "contract_breaker.py")])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["passed"] is False
    statuses = {rule["rule"]: rule["status"] for rule in report["rules"]}
    assert statuses["fetched versions match the listing"] == "fail"
