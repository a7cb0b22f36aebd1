"""Give every answerable case the answer texts of both languages (corpus/questions.toml,
corpus/questions-all.toml).

XQuAD asks each question in English and in German about the same paragraph, and the accepted
article of a case is its file name, which accepts the English and the German file. A German
question answered by the English passage is right, but its German ``expect_text`` does not occur
in English text, so "answer in passage" counted it as a miss: the published gap between hit@3 and
answer@3 was largely this. This script adds, to each case, the ``expect_text`` of the case with
the same XQuAD id in the other language (from ``questions-all.toml``, which holds both), after
its own. It changes nothing else and is idempotent.

Run from the repository root::

    uv run python corpus/both_answers.py
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parent
CASE = re.compile(r"# xquad (\w+)\n\[\[case\]\]\n((?:.+\n)+)")
EXPECT_TEXT = re.compile(r"^expect_text = (\[.*\])$", re.MULTILINE)


def answers_by_id(text: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for xquad_id, body in CASE.findall(text):
        match = EXPECT_TEXT.search(body)
        if match:
            for answer in json.loads(match.group(1)):
                if answer not in found.setdefault(xquad_id, []):
                    found[xquad_id].append(answer)
    return found


def with_both(text: str, answers: dict[str, list[str]]) -> str:
    def one(case: re.Match[str]) -> str:
        xquad_id, body = case.group(1), case.group(2)
        match = EXPECT_TEXT.search(body)
        if not match:
            return case.group(0)
        own = json.loads(match.group(1))
        merged = own + [answer for answer in answers.get(xquad_id, []) if answer not in own]
        line = "expect_text = " + json.dumps(merged, ensure_ascii=False)
        return case.group(0).replace(match.group(0), line)

    return CASE.sub(one, text)


def main() -> int:
    source = (CORPUS / "questions-all.toml").read_text(encoding="utf-8")
    answers = answers_by_id(source)
    for name in ("questions.toml", "questions-all.toml"):
        path = CORPUS / name
        before = path.read_text(encoding="utf-8")
        after = with_both(before, answers)
        path.write_text(after, encoding="utf-8")
        print(f"{name}: {'updated' if after != before else 'unchanged'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
