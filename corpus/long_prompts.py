"""Write corpus/long-prompts.toml: questions buried in pasted material, and pastes that ask nothing.

    uv run python corpus/long_prompts.py                      # the published set (seed 13)
    uv run python corpus/long_prompts.py --questions other.toml --out /tmp/long.toml --seed 7

Every case of the questions files (``corpus/questions.toml`` and ``corpus/near-topic.toml`` by
default) becomes one prompt: the question, sometimes with a lead-in sentence of its own language
that asks nothing ("Here is the log from last night:"), before, after or between pastes of 300 to
12,000 characters in all. The pastes are source code and a diff of this repository at a pinned
commit (AGPL like the rest of it), and logs, stack traces (Python, Java, JavaScript), JSON and
tables generated here. The files come from git by their commit (``git cat-file``, the same bytes on
every machine); the diff is kept as written once, in ``corpus/long-prompts.diff``, because what
``git diff`` prints depends on the git in use and its configuration (prefixes, context lines, the
indent heuristic), and a set that moved with those would not be one set. The case keeps its
``expect``/``expect_text``; its group gets the prefix ``long-``. Then :data:`PASTE_ONLY` prompts of
material and lead-ins alone (group ``paste-only``) must stay silent. The output depends only on the
arguments, the pinned commit and the kept diff.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PINNED = "dbb5787"
"""The commit whose files and diff are pasted (so the set does not move when the code does)."""
CODE_FILES = ("kernel/recall.py", "kernel/sync.py", "builtin/ranking.py", "kernel/config.py",
              "hooks/recall-hook.sh", "Dockerfile", "corpus/measure.sh")
"""Paths as they were at :data:`PINNED` (recall.py and sync.py have moved since)."""
DIFF = ROOT / "corpus" / "long-prompts.diff"
"""``git diff ac76f2c dbb5787 -- kernel builtin`` as git 2.39 printed it, configured by nothing."""
PASTE_ONLY = 40
MIN_CHARS, MAX_CHARS = 300, 12_000

LEAD_INS = {
    "en": ["Here is the log from last night:", "I pasted the file below.", "This is the current state:",
           "When I run the importer I get this:", "See the trace below.", "Our CI printed this.",
           "Context for my question follows.", "The config we use is attached."],
    "de": ["Hier ist das Log von heute Nacht:", "Ich habe die Datei unten eingefügt.",
           "Das ist der aktuelle Stand:", "Wenn ich den Import starte, kommt das:",
           "Siehe den Stacktrace unten.", "Unsere CI hat das ausgegeben.",
           "Der Kontext zu meiner Frage folgt.", "Die Konfiguration hängt an."],
}
WORDS = ("worker queue index batch upstream cache request session shard replica socket token "
         "config timeout backoff payload schema vector store build reconcile poll").split()


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def code_pool() -> list[str]:
    return [git("cat-file", "blob", f"{PINNED}:{name}") for name in CODE_FILES]


def slice_of(text: str, size: int, rng: random.Random) -> str:
    """About ``size`` characters of ``text`` from a random line on."""
    lines = text.splitlines()
    start = rng.randrange(max(len(lines) - 5, 1))
    out: list[str] = []
    for line in lines[start:] + lines[:start]:
        if sum(len(piece) + 1 for piece in out) >= size:
            break
        out.append(line)
    return "\n".join(out)


def log_lines(size: int, rng: random.Random) -> str:
    out, second = [], rng.randrange(3600)
    levels = ["INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"]
    while sum(len(line) + 1 for line in out) < size:
        second += rng.randrange(1, 9)
        stamp = f"2026-11-{rng.randrange(1, 30):02d} {second // 3600 % 24:02d}:{second // 60 % 60:02d}:{second % 60:02d}"
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(3, 9)))
        out.append(f"{stamp},{rng.randrange(1000):03d} {rng.choice(levels):5} [{rng.choice(WORDS)}-{rng.randrange(9)}] "
                   f"{words} ({rng.randrange(2000)} ms)")
    return "\n".join(out)


def trace(size: int, rng: random.Random) -> str:
    kind = rng.choice(["python", "java", "node"])
    out: list[str] = []
    while sum(len(line) + 1 for line in out) < size:
        name = rng.choice(WORDS)
        if kind == "python":
            out += ["Traceback (most recent call last):"]
            for depth in range(rng.randrange(3, 8)):
                out += [f'  File "/srv/app/{name}/{rng.choice(WORDS)}.py", line {rng.randrange(1, 900)}, in '
                        f"{rng.choice(WORDS)}_{depth}", f"    result = {rng.choice(WORDS)}({rng.choice(WORDS)})"]
            out += [f"{rng.choice(['KeyError', 'ValueError', 'TimeoutError'])}: {rng.choice(WORDS)} {name}", ""]
        elif kind == "java":
            out += [f"Exception in thread \"main\" java.lang.IllegalStateException: {name} failed"]
            out += [f"\tat com.example.{rng.choice(WORDS)}.{name.title()}.run({name.title()}.java:{rng.randrange(900)})"
                    for _ in range(rng.randrange(4, 12))]
            out += [f"Caused by: java.io.IOException: {rng.choice(WORDS)}", f"\t... {rng.randrange(3, 20)} more"]
        else:
            out += [f"TypeError: Cannot read properties of undefined (reading '{name}')"]
            out += [f"    at {rng.choice(WORDS)} (/app/src/{name}.js:{rng.randrange(500)}:{rng.randrange(80)})"
                    for _ in range(rng.randrange(4, 10))]
    return "\n".join(out)


def json_paste(size: int, rng: random.Random) -> str:
    def value(depth: int) -> object:
        if depth > 2 or rng.random() < 0.4:
            return rng.choice([rng.randrange(10_000), rng.choice(WORDS), True, None, round(rng.random(), 3)])
        if rng.random() < 0.5:
            return [value(depth + 1) for _ in range(rng.randrange(1, 4))]
        return {rng.choice(WORDS): value(depth + 1) for _ in range(rng.randrange(1, 5))}

    out: dict[str, object] = {}
    while len(json.dumps(out, indent=2)) < size:
        out[f"{rng.choice(WORDS)}_{len(out)}"] = value(0)
    return json.dumps(out, indent=2)


def table(size: int, rng: random.Random) -> str:
    head = rng.sample(WORDS, 4)
    out = ["| " + " | ".join(head) + " |", "|" + " --- |" * 4]
    while sum(len(line) + 1 for line in out) < size:
        out.append("| " + " | ".join(str(rng.choice([rng.randrange(999), rng.choice(WORDS)])) for _ in head) + " |")
    return "\n".join(out)


def material(size: int, rng: random.Random, code: list[str], diff: str) -> tuple[str, str]:
    kind = rng.choice(["code", "code", "log", "trace", "diff", "json", "table"])
    if kind == "code":
        return kind, slice_of(rng.choice(code), size, rng)
    if kind == "diff":
        return kind, slice_of(diff, size, rng)
    makers = {"log": log_lines, "trace": trace, "json": json_paste, "table": table}
    return kind, makers[kind](size, rng)


def language(group: str) -> str:
    return "de" if group.endswith("de") else "en"


def prompt_for(question: str | None, lang: str, rng: random.Random, code: list[str], diff: str) -> tuple[str, str]:
    """A prompt of pasted material around ``question`` (none: a paste alone); returns (kinds, prompt)."""
    total = int(round(MIN_CHARS * (MAX_CHARS / MIN_CHARS) ** rng.random()))
    place = rng.choice(["before", "after", "between"]) if question else "alone"
    parts, kinds = [], []
    pieces = 2 if place == "between" else 1
    for _ in range(pieces):
        kind, text = material(max(total // pieces - 80, 120), rng, code, diff)
        fence = kind == "code" and rng.random() < 0.5
        parts.append(f"```\n{text}\n```" if fence else text)
        kinds.append(kind)
    lead = rng.choice(LEAD_INS[lang]) if rng.random() < 0.6 else ""
    if place == "alone":
        blocks = [lead, parts[0]] if lead else [parts[0]]
    elif place == "before":  # the question before the paste
        blocks = [question, lead, parts[0]] if lead else [question, parts[0]]
    elif place == "after":
        blocks = [lead, parts[0], question] if lead else [parts[0], question]
    else:
        blocks = [parts[0], f"{lead} {question}".strip(), parts[1]]
    return f"{place}:{'+'.join(kinds)}", "\n\n".join(block for block in blocks if block)


def toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", nargs="+", type=Path,
                        default=[ROOT / "corpus/questions.toml", ROOT / "corpus/near-topic.toml"])
    parser.add_argument("--out", type=Path, default=ROOT / "corpus/long-prompts.toml")
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    code = code_pool()
    diff = DIFF.read_text(encoding="utf-8")
    cases = [case for path in args.questions for case in tomllib.loads(path.read_text("utf-8"))["case"]]
    lines = [
        f"# Long prompts for the sample corpus ({len(cases) + PASTE_ONLY} cases), written by",
        f"# `uv run python corpus/long_prompts.py --seed {args.seed}`: every question of "
        + ", ".join(path.name for path in args.questions) + " buried",
        "# in pasted material, and pastes that ask nothing (group paste-only). Do not edit by hand.",
        "",
    ]
    for case in cases:
        shape, prompt = prompt_for(case["query"], language(case["group"]), rng, code, diff)
        lines += [f"# {shape}, {len(prompt)} characters", "[[case]]", f"query = {toml_string(prompt)}"]
        for key in ("expect", "expect_text"):
            if key in case:
                lines.append(f"{key} = [{', '.join(toml_string(value) for value in case[key])}]")
        lines += [f'group = "long-{case["group"]}"', ""]
    for number in range(PASTE_ONLY):
        shape, prompt = prompt_for(None, "de" if number % 2 else "en", rng, code, diff)
        lines += [f"# {shape}, {len(prompt)} characters", "[[case]]", f"query = {toml_string(prompt)}",
                  'group = "paste-only"', ""]
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print(f"long_prompts.py: wrote {len(cases) + PASTE_ONLY} cases to {args.out}")


if __name__ == "__main__":
    main()
