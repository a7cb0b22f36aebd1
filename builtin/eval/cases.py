"""Cases files: the questions, what counts as a right answer, and the targets ``--enforce`` checks.

A cases file is TOML with an optional ``[targets]`` table and ``[[case]]`` tables. Parsing is
strict: an unknown key is an error that names it, because a misspelt ``expect`` would otherwise
silently turn a question into one that must stay silent.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from passageway.kernel.errors import EvalError

CASE_KEYS = ("query", "expect", "expect_id", "expect_text", "group")

# Target name -> True when a value must reach it (at least), False when it must stay at or below.
TARGETS: dict[str, bool] = {
    "hit_at_1": True,
    "hit_at_3": True,
    "mrr": True,
    "silence": True,
    "false_silence": False,
    "answer_at_1": True,
    "answer_at_3": True,
    "p95_ms": False,
}

UNGROUPED = "(no group)"


@attrs.frozen
class Case:
    """One question. Without ``expect`` and ``expect_id`` it must stay silent."""

    query: str
    expect: tuple[str, ...] = ()
    expect_id: tuple[str, ...] = ()
    expect_text: tuple[str, ...] = ()
    group: str | None = None

    @property
    def answerable(self) -> bool:
        return bool(self.expect or self.expect_id)

    @property
    def group_label(self) -> str:
        return self.group if self.group is not None else UNGROUPED


@attrs.frozen
class CaseFile:
    """The cases of one or more files, in order, and the targets they set."""

    cases: tuple[Case, ...]
    targets: dict[str, float] = attrs.field(factory=dict)
    has_targets: bool = False

    def only_groups(self, groups: Iterable[str]) -> CaseFile:
        """The cases whose group is one of ``groups`` (an unknown group is an error)."""
        wanted = list(groups)
        known = {case.group_label for case in self.cases}
        unknown = [name for name in wanted if name not in known]
        if unknown:
            raise EvalError(
                f"--group {', '.join(unknown)}: no case has that group; the groups are: "
                f"{', '.join(sorted(known))}"
            )
        cases = tuple(case for case in self.cases if case.group_label in wanted)
        return attrs.evolve(self, cases=cases)


def _strings(value: Any, key: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(part, str) and part for part in value):
        raise EvalError(
            f'{where}: `{key}` is a list of non-empty strings, such as {key} = ["Backpropagation"]'
        )
    return tuple(value)


def parse_cases_text(text: str, origin: str) -> CaseFile:
    """Parse one cases file; ``origin`` names it in error messages.

    :raises EvalError: invalid TOML, an unknown key, a wrong type, or no case at all.
    """
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise EvalError(f"{origin} is not valid TOML: {error}") from None
    for key in document:
        if key not in ("targets", "case"):
            hint = " (write each question as [[case]])" if key in ("cases", "question", "questions") else ""
            raise EvalError(
                f"{origin}: unknown key {key!r} at the top level; the keys there are: case, targets{hint}"
            )

    raw_targets = document.get("targets")
    targets = {} if raw_targets is None else _targets(raw_targets, origin)
    raw_cases = document.get("case", [])
    if not isinstance(raw_cases, list):
        raise EvalError(f"{origin}: write each question as a [[case]] table (double brackets)")
    cases = [_case(raw, f"{origin}: case {index}") for index, raw in enumerate(raw_cases, 1)]
    if not cases:
        raise EvalError(f"{origin} has no [[case]]; write at least one question")
    return CaseFile(tuple(cases), targets, raw_targets is not None)


def _targets(raw_targets: object, origin: str) -> dict[str, float]:
    """The ``[targets]`` table: each a share from 0 to 1, but ``p95_ms``, a number of 0 or more."""
    if not isinstance(raw_targets, dict):
        raise EvalError(f"{origin}: [targets] must be a table")
    targets: dict[str, float] = {}
    for key, value in raw_targets.items():
        if key not in TARGETS:
            raise EvalError(
                f"{origin}: unknown key {key!r} in [targets]; the keys there are: {', '.join(TARGETS)}"
            )
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise EvalError(f"{origin}: [targets] {key} must be a number of 0 or more, got {value!r}")
        if key != "p95_ms" and value > 1:
            raise EvalError(
                f"{origin}: [targets] {key} is a share from 0 to 1 (0.8 for 80%), got {value!r}"
            )
        targets[key] = float(value)
    return targets


def _case(raw: object, where: str) -> Case:
    """One ``[[case]]`` table; ``where`` names it in error messages."""
    if not isinstance(raw, dict):
        raise EvalError(f"{where} must be a table")
    for key in raw:
        if key not in CASE_KEYS:
            raise EvalError(
                f"{where}: unknown key {key!r}; the keys of a case are: {', '.join(CASE_KEYS)}"
            )
    query = raw.get("query")
    if not isinstance(query, str) or not query.strip():
        raise EvalError(f"{where}: `query` is required, the question as a user would ask it")
    expect = _strings(raw["expect"], "expect", where) if "expect" in raw else ()
    expect_id = _strings(raw["expect_id"], "expect_id", where) if "expect_id" in raw else ()
    expect_text = _strings(raw["expect_text"], "expect_text", where) if "expect_text" in raw else ()
    if expect_text and not (expect or expect_id):
        raise EvalError(
            f"{where}: `expect_text` needs `expect` or `expect_id` too (a question without them "
            "must stay silent, so it has no answer text)"
        )
    group = raw.get("group")
    if group is not None and (not isinstance(group, str) or not group.strip()):
        raise EvalError(f'{where}: `group` is a label such as "german questions"')
    return Case(query.strip(), expect, expect_id, expect_text, group)


def load_cases(paths: Sequence[Path]) -> CaseFile:
    """Read and merge cases files in order. Targets of a later file override an earlier one's."""
    if not paths:
        raise EvalError("name at least one cases file")
    cases: list[Case] = []
    targets: dict[str, float] = {}
    has_targets = False
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise EvalError(f"cases file {path} does not exist") from None
        except (OSError, UnicodeDecodeError) as error:
            raise EvalError(f"cannot read cases file {path}: {error}") from None
        parsed = parse_cases_text(text, str(path))
        cases.extend(parsed.cases)
        targets.update(parsed.targets)
        has_targets = has_targets or parsed.has_targets
    return CaseFile(tuple(cases), targets, has_targets)


# ---------------------------------------------------------------------------------------------
# Matching a hit against a case
# ---------------------------------------------------------------------------------------------

_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Case- and whitespace-insensitive form used for ``expect_text``."""
    return _SPACE.sub(" ", text).strip().casefold()


def accepts(case: Case, *, item_id: str, title: str, heading: str | None, url: str) -> bool:
    """Whether a hit is one of the case's accepted answers.

    ``expect`` entries match as case-insensitive substrings of the title, heading, address or item
    id; ``expect_id`` entries must equal the item id.
    """
    if item_id in case.expect_id:
        return True
    fields = [field.casefold() for field in (title, heading or "", url, item_id)]
    return any(entry.casefold() in field for entry in case.expect for field in fields)


def contains_answer(case: Case, text: str, heading: str | None = None) -> bool:
    """Whether a hit shows one of the case's answer texts: in its passage's text, or in
    ``heading``, the section heading an answer shows above that text (a question about the
    ``watch`` setting is answered by a hit headed "Live Reloading › watch")."""
    if not case.expect_text:
        return False
    shown = [normalise(text), normalise(heading or "")]
    return any(normalise(answer) in place for answer in case.expect_text for place in shown)
