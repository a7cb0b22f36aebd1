"""``GET /``: the health report as a small HTML page a person opens in a browser.

It shows what ``/health`` reports (the instance, the version, the embedder, each source's state,
counts, build progress and last success) under the same rules: open to anyone, with error texts
only for a request that carries the bearer password, and only the status for a ``Host`` that
``/health`` would not show more to (a page reached through DNS rebinding). One page, inline CSS,
no script, nothing fetched from elsewhere; while a source builds it reloads itself every few seconds.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from html import escape
from typing import TYPE_CHECKING, Any

from aiohttp import web

from passageway.kernel.durations import duration_text
from passageway.kernel.server import host_allowed

if TYPE_CHECKING:
    from passageway.kernel.app import Kernel

REFRESH_SECONDS = 5

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 48rem; padding: 0 1rem;
       color: #1d1d1f; background: #fff; }
h1 { font-size: 1.4rem; margin-bottom: .2rem; }
.meta { color: #666; margin-top: 0; }
table { border-collapse: collapse; width: 100%; margin-top: 1rem; }
th, td { text-align: left; padding: .4rem .5rem; border-bottom: 1px solid #ddd; vertical-align: top; }
.state { font-weight: 600; }
.ok { color: #1a7f37; } .indexing { color: #9a6700; } .failing, .degraded, .error { color: #cf222e; }
.error-text { color: #cf222e; font-size: .9em; white-space: pre-wrap; }
progress { width: 10rem; }
@media (prefers-color-scheme: dark) { body { color: #eee; background: #111; } th, td { border-color: #333; } }
"""


def _source_row(name: str, entry: Mapping[str, Any]) -> str:
    state = str(entry.get("state", "?"))
    progress = ""
    if state == "indexing" and entry.get("stage") == "windows":
        done, total = int(entry.get("windows") or 0), int(entry.get("windows_expected") or 0)
        progress = (f'<progress value="{done}" max="{max(total, done)}"></progress> every passage '
                    f"searchable; excerpt windows (they choose each answer's excerpt): {done} of {total}")
        if entry.get("eta_seconds") is not None:
            progress += f", about {duration_text(float(entry['eta_seconds']))} left"
    elif state == "indexing" and entry.get("of"):
        fetched, items = int(entry.get("fetched") or 0), int(entry["of"])
        if entry.get("expected"):  # passages move with every embedder call, items per batch
            done, total = int(entry.get("ready") or 0), int(entry["expected"])
            progress = (f'<progress value="{done}" max="{total}"></progress> {done} of {total} passages, '
                        f"{fetched} of {items} items, {int(entry.get('stored') or 0)} passages stored, "
                        f"{int(entry.get('windows') or 0)} of {int(entry.get('windows_expected') or 0)} "
                        "windows")
        else:
            progress = f'<progress value="{fetched}" max="{items}"></progress> {fetched} of {items} items'

        if entry.get("rate"):
            progress += f", {float(entry['rate']):.1f} passages/s"
        if entry.get("eta_seconds") is not None:
            progress += f", about {duration_text(float(entry['eta_seconds']))} left"
    error = entry.get("error")
    error_html = f'<div class="error-text">{escape(str(error))}</div>' if error else ""
    return (
        f"<tr><td>{escape(name)}</td>"
        f'<td class="state {escape(state)}">{escape(state)}{error_html}</td>'
        f"<td>{int(entry.get('items') or 0)}</td><td>{int(entry.get('passages') or 0)}</td>"
        f"<td>{progress}</td><td>{escape(str(entry.get('last_success') or '-'))}</td></tr>"
    )


def render_page(report: Mapping[str, Any]) -> str:
    """The HTML page for one health report."""
    status = str(report.get("status", "?"))
    name = "passageway" + (f" {report['instance']}" if report.get("instance") else "")
    refresh = (
        f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}">' if status in ("indexing", "error") else ""
    )
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        refresh,
        f"<title>{escape(name)}: {escape(status)}</title><style>{STYLE}</style></head><body>",
        f'<h1>{escape(name)}: <span class="state {escape(status)}">{escape(status)}</span></h1>',
        f'<p class="meta">version {escape(str(report.get("version", "?")))}'
        + (f" · reloads every {REFRESH_SECONDS} s while it builds" if refresh else "") + "</p>",
    ]
    if status == "error":
        parts.append(f'<p class="error-text">{escape(str(report.get("error", "")))}</p>')
    embedder = report.get("embedder")
    if embedder:
        label = embedder.get("name") or embedder.get("kind") or "?"
        state = str(embedder.get("state", "?"))
        error = ""
        if embedder.get("error"):
            error = f' <span class="error-text">{escape(str(embedder["error"]))}</span>'
        parts.append(
            f'<p>Embedder {escape(str(label))}: '
            f'<span class="state {escape(state)}">{escape(state)}</span>{error}</p>'
        )
    sources = report.get("sources")
    if sources is not None:
        if sources:
            rows = "".join(_source_row(source, entry) for source, entry in sources.items())
            parts.append(
                "<table><thead><tr><th>Source</th><th>State</th><th>Items</th><th>Passages</th>"
                f"<th>Build</th><th>Last success</th></tr></thead><tbody>{rows}</tbody></table>"
            )
        else:
            parts.append("<p>No sources yet: add a <code>[[connector]]</code> to passageway.toml.</p>")
    parts.append("</body></html>")
    return "\n".join(part for part in parts if part)


def status_page_handler(kernel: Kernel) -> Callable[[web.Request], Awaitable[web.Response]]:
    """The ``GET /`` handler for ``kernel``: errors only for a request with the password."""

    async def status_page(request: web.Request) -> web.Response:
        report = kernel.health(include_errors=kernel.authorize(request))
        if not host_allowed(kernel, request.host):
            report = {"status": report["status"]}
        return web.Response(
            text=render_page(report),
            content_type="text/html",
            status=503 if report["status"] == "error" else 200,
            headers={"Cache-Control": "no-store"},
        )

    return status_page
