"""The near-topic sets the answerability score is tuned and reported on stay apart (issue 35).

``corpus/docs/near-topic-tuning.toml`` may be tuned on; ``near-topic-users.toml`` (the second
near-topic set) never is. These tests keep the tuning set to the tuning projects and keep it from
sharing a question or an issue thread with the set it is reported against.
"""

from __future__ import annotations

import re
from pathlib import Path

from passageway.builtin.eval.cases import load_cases

DOCS = Path(__file__).resolve().parent.parent / "corpus" / "docs"
THREAD = re.compile(r"[\w.-]+/[\w.-]+#\d+(?:\s+and\s+#\d+)*")


def threads(path: Path) -> set[str]:
    """Every issue thread named in the file's comments, as owner/name#number."""
    found = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            continue
        for match in THREAD.finditer(line):
            repository, _, first = match.group(0).partition("#")
            numbers = [first.split()[0], *re.findall(r"#(\d+)", match.group(0))]
            found |= {f"{repository}#{number}" for number in numbers}
    return found


def test_the_tuning_set_asks_only_about_the_tuning_projects_and_expects_silence():
    cases = load_cases([DOCS / "near-topic-tuning.toml"]).cases
    assert len(cases) >= 20
    assert {case.group.split("-")[0] for case in cases} == {"starship", "typer"}
    assert not any(case.answerable for case in cases)


def test_the_tuning_set_shares_no_question_and_no_thread_with_the_second_set():
    tuning, users = DOCS / "near-topic-tuning.toml", DOCS / "near-topic-users.toml"
    asked = {case.query.casefold() for case in load_cases([users]).cases}
    assert not {case.query.casefold() for case in load_cases([tuning]).cases} & asked
    named = threads(tuning)
    assert named, "the tuning set names the issue threads its questions come from"
    assert not named & threads(users)


def test_thread_names_are_read_with_their_second_numbers(tmp_path):
    sample = tmp_path / "sample.toml"
    sample.write_text("# starship/starship#597 and #5383 (two threads)\nquery = \"x#1\"\n", encoding="utf-8")
    assert threads(sample) == {"starship/starship#597", "starship/starship#5383"}
