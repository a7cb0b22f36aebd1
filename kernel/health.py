"""The health report: overall status, the embedder, and each source's state and counts.

``/health``, the status page, the MCP ``status`` tool and ``passageway status`` all show it.
Error texts are included only for a caller that showed the password.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from passageway.kernel.app import Kernel
    from passageway.kernel.index.sources import Source


def health_report(kernel: Kernel, include_errors: bool) -> dict[str, Any]:
    """The health report: overall status, the embedder, and each source's state and counts.

    Error texts are included only when ``include_errors`` (the caller showed the password).
    """
    report: dict[str, Any] = {"status": "ok", "version": kernel.version}
    report["instance"] = kernel.instance
    if kernel.config_error is not None:
        report["status"] = "error"
        report["error"] = kernel.config_error if include_errors else "the configuration is broken"
        return report

    embedder: dict[str, Any] = {"state": "ok" if kernel.embedder_error is None else "failing"}
    if kernel.embedder is not None and kernel.embedder_started:
        embedder["name"] = kernel.embedder.name
    elif kernel.settings is not None:
        embedder["kind"] = kernel.settings.embedder.kind
    if kernel.embedder_error is not None and include_errors:
        embedder["error"] = kernel.embedder_error
    report["embedder"] = embedder

    sources: dict[str, Any] = {}
    for name, source in kernel.sources.items():
        sources[name] = _source_entry(kernel, source, include_errors)
    report["sources"] = sources

    states = {entry["state"] for entry in sources.values()}
    if kernel.embedder_error is not None or "failing" in states:
        report["status"] = "degraded"
    elif "indexing" in states:
        report["status"] = "indexing"
    return report

def _source_entry(kernel: Kernel, source: Source, include_errors: bool) -> dict[str, Any]:
    if source.removed:
        items, passages = source.counts
        return {"state": "ok", "items": items, "passages": passages, "removed": True}
    entry: dict[str, Any] = {"state": "indexing", "items": 0, "passages": 0}
    # A store that knows its database is away says why (the postgres store's ``unreachable``): the
    # source fails now, not when a sync stuck in the database's timeouts gives up (issue 38.7).
    away = getattr(source.store, "unreachable", None)
    error = source.error or kernel.syncs.errors.get(source.name) or (away if isinstance(away, str) else None)
    if source.sync is not None:
        health = source.sync.health()
        entry = dict(health.full() if include_errors else health.public())
        entry.pop("last_error", None)
        error = error or health.last_error
        if entry["state"] == "ok" and health.last_success is None and error is None:
            entry["state"] = "indexing"  # not built yet: the first sync has not finished
    elif kernel.embedder_error is not None and error is None:
        error = f"waiting for the embedder: {kernel.embedder_error}"
    if source.name in kernel.syncs.roles:  # a shared store: which replica syncs the source
        entry.update(kernel.syncs.roles[source.name].view())
    if error is not None:
        entry["state"] = "failing"
        entry["failing"] = True
        if include_errors:
            entry["error"] = str(error)
    return entry
