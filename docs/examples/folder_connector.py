#!/usr/bin/env python3
"""A passageway connector for a folder of .txt files, written against the bare protocol.

Setting (environment): FOLDER, the folder to serve. Run it as `folder_connector.py <mode>`.
It needs nothing but Python's standard library.
"""
import hashlib
import json
import os
import sys
from pathlib import Path


def fail(message, code):
    print(f"folder connector: {message}", file=sys.stderr)
    sys.exit(code)


root = Path(os.environ.get("FOLDER", "")).resolve()
if not os.environ.get("FOLDER") or not root.is_dir():
    fail("set FOLDER to an existing folder", 2)
texts = {path.relative_to(root).as_posix(): path for path in sorted(root.rglob("*.txt")) if path.is_file()}


def version(path):
    # Changes exactly when the file's bytes change.
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def record(item_id, path):
    return {
        "id": item_id,
        "title": path.stem,
        "url": path.as_uri(),
        "version": version(path),
        "sections": [{"heading": None, "text": path.read_text(encoding="utf-8")}],
    }


mode = sys.argv[1] if len(sys.argv) > 1 else ""
lines = []  # printed only when the whole call worked
if mode == "check":
    lines.append({"ok": True, "count": len(texts), "protocol": "1"})
elif mode == "list":
    lines.extend({"id": item_id, "version": version(path)} for item_id, path in texts.items())
elif mode == "fetch":
    wanted = []
    for line in sys.stdin:
        if line.strip():
            try:
                wanted.append(json.loads(line)["id"])
            except (ValueError, KeyError, TypeError):
                fail(f"not a request line: {line.strip()[:80]!r}", 2)
    lines.extend(record(item_id, texts[item_id]) for item_id in dict.fromkeys(wanted) if item_id in texts)
elif mode == "changed":
    pass  # optional: printing nothing means "edits show up at the next reconcile"
else:
    fail("usage: folder_connector.py check | list | fetch | changed --since TIME", 2)
for line in lines:
    print(json.dumps(line))
