"""How long the runner takes to decode and check a connector's lines (kernel/connector/lines.py).

Run: ``uv run python bench/connector_lines.py``. Times ``parse_lines`` on 100,000 ``list`` lines
and 10,000 ``fetch`` lines of about 600 characters, each twice (the second run counts), so the
schema check (compiled by fastjsonschema) can be compared with what the JSON decoding and the
records cost around it.
"""

from __future__ import annotations

import argparse
import json
import time

from passageway.kernel.connector.lines import parse_lines


def main() -> None:
    argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0]).parse_args()  # --help only
    listed = [
        json.dumps({"id": f"notes/page-{index}.md", "version": f"v{index % 28}"}).encode()
        for index in range(100_000)
    ]
    items = [
        json.dumps({
            "id": f"notes/{index}", "title": "Certificates", "url": "https://example.invalid/",
            "version": "1",
            "sections": [{"heading": "Steps", "text": "Rotate yearly. " * 40}], "path": ["notes"],
            "updated": "2026-10-28T09:00:00Z",
        }).encode()
        for index in range(10_000)
    ]
    for _ in range(2):
        started = time.perf_counter()
        parse_lines(listed, 1, "list")
        list_seconds = time.perf_counter() - started
        started = time.perf_counter()
        parse_lines(items, 1, "fetch")
        item_seconds = time.perf_counter() - started
    print(f"100,000 list lines: {list_seconds:.2f} s; 10,000 item lines: {item_seconds:.2f} s")


if __name__ == "__main__":
    main()
