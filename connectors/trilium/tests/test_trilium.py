"""The Trilium connector against the in-test ETAPI: the items, the tree, changes, errors and secrets."""

from __future__ import annotations

from .conftest import TOKEN, run_connector


def test_sketch(trilium):
    listed = run_connector("list", URL=trilium.url)
    print(listed.stderr)
    versions = {r["id"]: r["version"] for r in listed.records}
    print(sorted(versions))
    fetched = run_connector("fetch", ids=sorted(versions), URL=trilium.url, MAX_NOTE_BYTES="20000")
    print(fetched.stderr)
    import json
    for r in fetched.records:
        print(json.dumps(r, ensure_ascii=False)[:600])
    assert TOKEN
