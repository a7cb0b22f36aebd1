"""Shared by the misbehaving connectors: the good answers, and "misbehave once".

Each script in this folder breaks one protocol rule. With ``ONCE=<path>`` in its environment it
breaks the rule only on the first call (it creates ``<path>``) and answers well afterwards, so a
test can show that the runner is still usable after a failed call.
"""

import json
import os
import sys

ITEMS = {
    "a": {"id": "a", "title": "Alpha", "url": "https://example.invalid/a", "version": "1",
          "sections": [{"heading": None, "text": "The first item."}]},
    "b": {"id": "b", "title": "Beta", "url": "https://example.invalid/b", "version": "2",
          "sections": [{"heading": "Part", "text": "The second item."}]},
}


def first_call() -> bool:
    """True when this call should misbehave."""
    marker = os.environ.get("ONCE")
    if not marker:
        return True
    if os.path.exists(marker):
        return False
    with open(marker, "w") as handle:
        handle.write("done")
    return True


def emit(record) -> None:
    sys.stdout.write(json.dumps(record) + "\n")


def requested_ids() -> list[str]:
    return [json.loads(line)["id"] for line in sys.stdin if line.strip()]


def behave(mode: str) -> int:
    """The correct answer to ``mode``."""
    if mode == "check":
        emit({"ok": True, "count": len(ITEMS), "protocol": "1"})
    elif mode == "list":
        for item in ITEMS.values():
            emit({"id": item["id"], "version": item["version"]})
    elif mode == "fetch":
        for item_id in requested_ids():
            if item_id in ITEMS:
                emit(ITEMS[item_id])
    return 0
