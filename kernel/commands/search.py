"""``passageway search QUESTION``: one recall from the terminal, printed as the MCP tool renders it.

Without ``--local`` it asks the running server's ``POST /recall`` with the instance's password,
over plain HTTP, so it sees what Claude Code's prompt hook sees (the same rendering as the MCP
``recall`` tool), and starts in a fraction of a second: no MCP client is imported. With
``--local`` it opens the data folder itself (no server needed); a source whose index is still
empty is built first, with a progress bar on a terminal. Exit codes: 0 passages found, 1 nothing
relevant (silence, also while a source is still building), 2 the question could not be asked (no
server, a wrong password, a broken configuration, a failing embedder, a server still starting).
Silence is the hook's empty context, never read from a text.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

from passageway.kernel.errors import PassagewayError
from passageway.kernel.invocation import hint

NAME = "search"
HELP = "ask the sources one question and print the passages (exit 1 when nothing is relevant)"


class SearchFailed(PassagewayError):
    """The question could not be asked; not the same as an answer of silence."""

    exit_code = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from passageway.kernel.commands.instance import add_server_arguments

    parser.add_argument("question", nargs="+", metavar="QUESTION", help="the question, in natural language")
    parser.add_argument("--json", action="store_true", help="print the answer as JSON")
    parser.add_argument(
        "--local", action="store_true",
        help="search the data folder in this process instead of asking the running server",
    )
    parser.add_argument("--config", type=Path, metavar="PATH", help="with --local: use this passageway.toml")
    add_server_arguments(parser)


def run(args: argparse.Namespace) -> int:
    question = " ".join(args.question).strip()
    if not question:
        raise SearchFailed("the question is empty: passageway search \"how does the gate work?\"")
    if args.local:
        import asyncio

        text, silent, hits = asyncio.run(_local(args, question))
    else:
        text, silent = _remote(args, question)
        hits = None
    if args.json:
        answer: dict[str, Any] = {"silent": silent, "text": text}
        if hits is not None:
            answer["hits"] = hits
        print(json.dumps(answer, indent=2, ensure_ascii=False))
    else:
        print(text)
    return 1 if silent else 0


def _remote(args: argparse.Namespace, question: str) -> tuple[str, bool]:
    """The running server's answer to ``POST /recall`` (what the prompt hook gets): its text, and
    whether it was silence. Plain HTTP from the standard library: no MCP client to import."""
    from passageway.kernel.commands.instance import ServerUnreachable, find_password, request, server_url
    from passageway.kernel.instances import resolve_instance

    environ = os.environ
    instance = resolve_instance(args.instance, environ)
    password, origin = find_password(environ, instance)
    if not password:
        raise SearchFailed(
            f"no password to ask the server with: run `{hint('init')}`, or set PASSAGEWAY_LOGIN_PASSWORD_FILE"
        )
    url = server_url(args, environ)
    body = json.dumps({"prompt": question}).encode("utf-8")
    try:
        status, reply = request(f"{url}/recall", password, body=body, timeout=60)
    except ServerUnreachable as error:
        if not error.reason:  # not an address at all
            raise SearchFailed(str(error)) from None
        raise SearchFailed(_unreachable(url, error.reason)) from None
    answer = _json_object(reply)
    if status != 200:
        raise SearchFailed(_refusal(url, status, answer, origin))
    context = answer.get("context")
    if not isinstance(context, str):
        raise SearchFailed(f"{url}/recall answered without a `context`: is it passageway? Check --url")
    if context:
        return context, False
    return _silence(url, password), True


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        value = json.loads(body)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _refusal(url: str, status: int, answer: dict[str, Any], origin: str) -> str:
    """One line for an answer other than 200, by what it means to the user; ``origin`` is where
    the password came from (a variable's name or a file's path, never the password)."""
    error = str(answer.get("error") or "").strip()
    if status == 401:
        return (f"{url} refused the password from {origin} (HTTP 401); use the one that server reads "
                "(its first log line names it), or name your own server with --url")
    if status == 404:
        return f"{url} has no /recall: it is not a passageway server; check --url"
    if status == 503 and "starting" in error:
        return (f"the server at {url} is starting (its embedding model is loading; the first start on a "
                "machine converts it once, up to a minute); ask again shortly")
    if status == 503 and error:
        return f"the server could not answer: {error}"
    return f"{url}/recall answered HTTP {status}{': ' + error if error else ''}; check --url"


def _silence(url: str, password: str) -> str:
    """The line for silence, as the ``recall`` tool words it: with the sources still building,
    which ``/health`` tells (the hook's silence is an empty text); and what a newcomer would
    otherwise misread as a searched silence: no sources at all, or sources that fail."""
    from passageway.kernel.commands.instance import ServerUnreachable, get_json
    from passageway.kernel.query.rendering import NOTHING, NOTHING_YET

    try:
        _, report = get_json(f"{url}/health", password)
    except ServerUnreachable:
        return NOTHING
    sources = report.get("sources")
    if sources == {}:  # a bare `init`: nothing was searched at all
        return (f"No sources to search: add a [[connector]] to passageway.toml "
                f"(or run `{hint('init --folder DIR')}`), then restart the server.")
    entries = [(name, entry) for name, entry in (sources or {}).items() if isinstance(entry, dict)]
    notes = [building_note(name, entry) for name, entry in entries if entry.get("state") == "indexing"]
    text = f"{NOTHING_YET} Still indexing: {'; '.join(notes)}." if notes else NOTHING
    failing = [name for name, entry in entries if entry.get("state") == "failing"]
    if failing:
        text += f" Failing: {', '.join(failing)} (`{hint('status')}` says why)."
    return text


def building_note(name: str, entry: dict[str, Any]) -> str:
    """A building source in the server's words: ``notes: 2 of 4 passages searchable by meaning so far``."""
    expected = entry.get("expected")
    if not expected:
        return f"{name}: starting its first build"
    return f"{name}: {entry.get('ready') or 0} of {expected} passages searchable by meaning so far"


def refuse_beside_a_server(data_dir: Path) -> None:
    """``--local`` opens and may build the indexes of ``data_dir``: never under a running server."""
    from passageway.kernel.commands.server_lock import server_running

    if server_running(data_dir):
        raise SearchFailed(
            f"a passageway server is running on this data folder ({data_dir}), and --local would "
            f"write into it: ask the server (`{hint('search')} QUESTION`, without --local), or stop it"
        )


def _unreachable(url: str, reason: str) -> str:
    return (
        f"no passageway answers at {url} ({reason}); start it with `{hint()}`, "
        "name its address with --url, or search the data folder with --local"
    )


async def _local(args: argparse.Namespace, question: str) -> tuple[str, bool, list[dict[str, Any]]]:
    """Recall in this process; sources with an empty index are built first."""
    import asyncio

    import attrs

    from passageway.kernel.app import Kernel
    from passageway.kernel.config import load_settings
    from passageway.kernel.progress import ProgressBar, watch_build
    from passageway.kernel.query.rendering import render_answer

    settings = load_settings(instance=args.instance, config_path=args.config)
    refuse_beside_a_server(settings.data_dir)
    async with Kernel.open(settings) as kernel:
        if kernel.embedder_error is not None:
            raise SearchFailed(f"the embedder could not start: {kernel.embedder_error}")
        empty = []
        for source in kernel.sources.values():
            if source.store is not None and source.sync is not None and (await source.store.counts())[0] == 0:
                empty.append(source)
        if empty:
            print(f"passageway: building {', '.join(s.name for s in empty)} first", file=sys.stderr)
            bar = ProgressBar()
            watcher = asyncio.ensure_future(watch_build(lambda: kernel.health(include_errors=False), bar))
            try:
                results = await asyncio.gather(
                    *(source.sync.sync_once() for source in empty if source.sync is not None),
                    return_exceptions=True,
                )
            finally:
                watcher.cancel()
                await asyncio.gather(watcher, return_exceptions=True)
            for source, result in zip(empty, results, strict=True):
                if isinstance(result, BaseException):
                    print(f"passageway: source {source.name!r} failed to build: {result}", file=sys.stderr)
        try:
            answer = await kernel.recall(question)
        except PassagewayError as error:
            raise SearchFailed(str(error)) from None
    hits = [attrs.asdict(hit) for hit in answer.hits]
    for hit in hits:  # a passage found by its words before its vector exists has no cosine
        if isinstance(hit["similarity"], float) and math.isnan(hit["similarity"]):
            hit["similarity"] = None
    return render_answer(answer), answer.silent, hits
