"""A connector that misbehaves in one way, chosen by ``BEHAVIOUR``, on the fetch of ``BAD_IDS``.

It lists ``COUNT`` items (``item-0`` ...) and fetches them well, except that a fetch asking for one
of the ids in ``BAD_IDS`` (``first:last``, inclusive numbers, or numbers separated by commas)
misbehaves. Once the file ``HEALED`` exists it behaves in every call, so a test can show what the
next sync recovers.

garbage       prints random bytes instead of a record
invalid-utf8  prints a record whose text holds a byte that is not UTF-8
surrogate     prints a record whose text holds a lone surrogate escape (repaired, kept)
huge-line     prints one line of 50 MB
duplicate     prints one record twice
hang          sleeps for an hour
exit          prints every record, then exits with status 3
half          prints half the records, then exits with status 1
deep          prints a record with a field nested 200,000 deep
"""

import json
import os
import random
import sys
import time

COUNT = int(os.environ.get("COUNT", "120"))
BEHAVIOUR = os.environ.get("BEHAVIOUR", "")

def bad_numbers(text: str) -> set[int]:
    if ":" in text:
        first, last = (int(part) for part in text.split(":"))
        return set(range(first, last + 1))
    return {int(part) for part in text.split(",") if part.strip()}


BAD = bad_numbers(os.environ.get("BAD_IDS", "60:60"))


def record(number: int) -> dict:
    text = f"The text of item {number} about rivers."
    return {"id": f"item-{number}", "title": f"Item {number}", "url": f"https://example.invalid/{number}",
            "version": "1", "sections": [{"heading": "Body", "text": text}]}


def write(line: bytes) -> None:
    sys.stdout.buffer.write(line + b"\n")


def main() -> int:
    mode = sys.argv[1]
    if mode == "check":
        write(json.dumps({"ok": True, "count": COUNT}).encode())
        return 0
    if mode == "list":
        for number in range(COUNT):
            write(json.dumps({"id": f"item-{number}", "version": "1"}).encode())
        return 0
    if mode != "fetch":
        return 0
    wanted = [int(json.loads(line)["id"].split("-")[1]) for line in sys.stdin if line.strip()]
    healed = os.path.exists(os.environ.get("HEALED", "/nonexistent"))
    if healed or not BAD.intersection(wanted):
        for number in wanted:
            write(json.dumps(record(number)).encode())
        return 0
    return misbehave(wanted)


def misbehave(wanted: list[int]) -> int:
    """The fetch of ``wanted``, one of which is bad, done the way ``BEHAVIOUR`` names."""
    lines = [json.dumps(record(number)).encode() for number in wanted]
    bad = next(index for index, number in enumerate(wanted) if number in BAD)
    if BEHAVIOUR == "hang":
        time.sleep(3600)
    elif BEHAVIOUR == "half":
        for line in lines[: len(lines) // 2]:
            write(line)
        sys.stdout.flush()
        print("lost the connection half-way", file=sys.stderr)
        return 1
    else:
        spoil(lines, bad)
    for line in lines:
        write(line)
    if BEHAVIOUR == "exit":
        sys.stdout.flush()
        print("failed after printing everything", file=sys.stderr)
        return 3
    return 0


def spoil(lines: list[bytes], bad: int) -> None:
    """Spoil the record at ``bad`` (or add one) as ``BEHAVIOUR`` says; other behaviours leave them."""
    if BEHAVIOUR == "garbage":
        lines[bad] = bytes(random.Random(7).randrange(256) for _ in range(300)).replace(b"\n", b" ")
    elif BEHAVIOUR == "invalid-utf8":
        lines[bad] = lines[bad].replace(b"about rivers", b"about \xff\xfe rivers")
    elif BEHAVIOUR == "surrogate":
        lines[bad] = lines[bad].replace(b"about rivers", b"about \\ud800 rivers")
    elif BEHAVIOUR == "huge-line":
        lines[bad] = b'{"id": "' + b"x" * 50_000_000 + b'"}'
    elif BEHAVIOUR == "deep":
        lines[bad] = lines[bad][:-1] + b', "extra": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    elif BEHAVIOUR == "duplicate":
        lines.insert(bad, lines[bad])


if __name__ == "__main__":
    sys.exit(main())
