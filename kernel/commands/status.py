"""``passageway status``: the running server's health report, readable, with each source's progress.

It asks ``GET /health`` with the instance's password (when one is found), so the errors are
included; ``--json`` prints the report as the server sent it. Exit codes: 0 when the status is
``ok``, ``starting`` or ``indexing``, 1 when it is ``degraded`` or ``error``, 2 when no server answers.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping
from typing import Any

from passageway.kernel.invocation import hint

NAME = "status"
HELP = "the running server's health: every source's state, counts and build progress (exit 1 when degraded)"

HEALTHY = ("ok", "indexing", "starting")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from passageway.kernel.commands.instance import add_server_arguments

    add_server_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the health report as JSON")


def run(args: argparse.Namespace) -> int:
    from passageway.kernel.commands.instance import find_password, get_json, server_url
    from passageway.kernel.instances import resolve_instance

    environ = os.environ
    instance = resolve_instance(args.instance, environ)
    password, origin = find_password(environ, instance)
    url = server_url(args, environ)
    _, report = get_json(f"{url}/health", password)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(render_status(report, url, origin if password else ""))
    return 0 if report.get("status") in HEALTHY else 1


def source_line(name: str, entry: Mapping[str, Any]) -> str:
    """One source: state, counts, and the build's progress or the error when there is one."""
    from passageway.kernel.durations import duration_text

    state = entry.get("state", "?")
    parts = [f"{entry.get('items', 0)} items, {entry.get('passages', 0)} passages"]
    if state == "indexing" and entry.get("stage") == "windows":
        parts.append(windows_progress(entry))
    elif state == "indexing" and entry.get("of"):
        progress = (f"building: {entry.get('fetched') or 0} of {entry['of']} items fetched, "
                    f"{entry.get('stored') or 0} passages stored, "
                    f"{entry.get('ready') or 0} of {entry.get('expected') or '?'} passages ready, "
                    f"{entry.get('windows') or 0} of {entry.get('windows_expected') or '?'} windows")
        if entry.get("rate"):
            progress += f", {entry['rate']:.1f} passages/s"
        if entry.get("eta_seconds") is not None:
            progress += f", about {duration_text(entry['eta_seconds'])} left"
        parts.append(progress)
    if entry.get("last_success"):
        parts.append(f"last success {entry['last_success']}")
    error = entry.get("error") or entry.get("last_error")
    if error:
        parts.append(f"error: {error}")
    return f"  {name}: {state}: " + "; ".join(parts)


WINDOWS_NOTE = "every passage searchable; excerpt windows (they choose each answer's excerpt)"


def windows_progress(entry: Mapping[str, Any]) -> str:
    """The windows stage of a build, in the words ``/health``'s ``stage`` stands for:
    ``every passage searchable; excerpt windows (...): 120 of 264, about 2 min left``."""
    from passageway.kernel.durations import duration_text

    text = f"{WINDOWS_NOTE}: {entry.get('windows') or 0} of {entry.get('windows_expected') or '?'}"
    if entry.get("eta_seconds") is not None:
        text += f", about {duration_text(entry['eta_seconds'])} left"
    return text


def render_status(report: Mapping[str, Any], url: str, password_origin: str = "") -> str:
    """The report as lines a person reads: the overall status, the embedder, then each source.
    ``password_origin`` names where the password sent came from ("" when none was sent): a report
    without error texts then means the server refused it."""
    instance = f" (instance {report['instance']})" if report.get("instance") else ""
    lines = [f"passageway {report.get('version', '?')}{instance} at {url}: {report.get('status', '?')}"]
    if report.get("status") == "error":
        lines.append(f"  {report.get('error', 'the configuration is broken')}")
        return "\n".join(lines)
    if report.get("status") == "starting":
        lines.append("  loading the embedding model (the first start on a machine converts it once, up "
                     "to a minute) and opening the indexes; ask again shortly")
        return "\n".join(lines)
    embedder = report.get("embedder") or {}
    what = embedder.get("name") or embedder.get("kind") or "?"
    line = f"embedder {what}: {embedder.get('state', '?')}"
    if embedder.get("error"):
        line += f": {embedder['error']}"
    lines.append(line)
    sources = report.get("sources") or {}
    if not sources:
        lines.append(f"no sources: add a [[connector]] to passageway.toml (or `{hint('init --folder DIR')}`)")
    else:
        lines.append("sources:")
        lines.extend(source_line(name, entry) for name, entry in sources.items())
    if any(entry.get("failing") and "error" not in entry for entry in sources.values()):
        if password_origin:
            lines.append(f"(the server hides the errors: it refused the password from {password_origin}; "
                         "use the one its first log line names)")
        else:
            lines.append(f"(the errors are shown with the password: run `{hint('init')}`, or set "
                         "PASSAGEWAY_LOGIN_PASSWORD_FILE)")
    return "\n".join(lines)
