"""A connector that breaks one contract rule, chosen by $BREAK; without it, it keeps them all.

unstable-version  list gives a new version on every call
lost-items        fetch never returns item "b"
version-mismatch  fetch reports another version than list
ignores-request   fetch returns every item, whatever was asked
prints-then-fails fetch prints as it goes and crashes on a malformed request line
leaks-secrets     every call dumps its environment on stderr
changed-stranger  changed returns an item that list does not know
not-unicode       fetch writes item "a" with a lone surrogate escape in its text
deep-record       fetch writes item "a" with a field nested 200,000 deep
"""
import json
import os
import sys
import time

from common import ITEMS, behave, emit

mode = sys.argv[1]
broken = os.environ.get("BREAK", "")

if broken == "leaks-secrets":
    print(f"debug: environment is {dict(os.environ)}", file=sys.stderr)
if mode == "list" and broken == "unstable-version":
    for item in ITEMS.values():
        emit({"id": item["id"], "version": str(time.time_ns())})
    sys.exit(0)
if mode == "fetch" and broken in ("lost-items", "version-mismatch", "ignores-request", "prints-then-fails"):
    if broken == "ignores-request":
        for item in ITEMS.values():
            emit(item)
        sys.exit(0)
    for line in sys.stdin:
        item_id = json.loads(line)["id"]  # crashes with a traceback on a malformed line
        if item_id not in ITEMS or (broken == "lost-items" and item_id == "b"):
            continue
        record = dict(ITEMS[item_id])
        if broken == "version-mismatch":
            record["version"] = "other"
        emit(record)
        sys.stdout.flush()
    sys.exit(0)
if mode == "fetch" and broken == "not-unicode":
    for line in sys.stdin:
        item_id = json.loads(line)["id"]
        if item_id in ITEMS:
            record = dict(ITEMS[item_id], sections=[{"heading": None, "text": "half of a pair: \ud800"}])
            sys.stdout.write(json.dumps(record) + "\n")  # json escapes it as \\ud800
    sys.exit(0)
if mode == "fetch" and broken == "deep-record":
    for line in sys.stdin:
        item_id = json.loads(line)["id"]
        if item_id in ITEMS:
            text = json.dumps(ITEMS[item_id])
            sys.stdout.write(text[:-1] + ', "extra": ' + "[" * 200_000 + "]" * 200_000 + "}\n")
    sys.exit(0)
if mode == "changed" and broken == "changed-stranger":
    emit({**ITEMS["a"], "id": "zzz"})
    sys.exit(0)
sys.exit(behave(mode))
