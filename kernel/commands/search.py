"""``passageway search QUESTION``: one recall from the terminal, printed as the MCP tool renders it.

Without ``--local`` it asks the running server's ``recall`` tool over MCP, with the instance's
password, so it sees exactly what Claude sees. With ``--local`` it opens the data folder itself
(no server needed); a source whose index is still empty is built first, with a progress bar on a
terminal. Exit codes: 0 passages found, 1 nothing relevant (silence, also while a source is still
building), 2 the question could not be asked (no server, a wrong password, a broken configuration,
a failing embedder). Silence is read from the answer's structure, never from its text.
"""

from __future__ import annotations

import argparse
import asyncio
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
        text, silent, hits = asyncio.run(_local(args, question))
    else:
        text, silent = asyncio.run(_remote(args, question))
        hits = None
    if args.json:
        answer: dict[str, Any] = {"silent": silent, "text": text}
        if hits is not None:
            answer["hits"] = hits
        print(json.dumps(answer, indent=2, ensure_ascii=False))
    else:
        print(text)
    return 1 if silent else 0


async def _remote(args: argparse.Namespace, question: str) -> tuple[str, bool]:
    """The running server's ``recall`` tool: its text, and whether it was silence."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from passageway.kernel.commands.instance import find_password, mcp_http_client, server_url
    from passageway.kernel.instances import resolve_instance

    environ = os.environ
    instance = resolve_instance(args.instance, environ)
    password, _ = find_password(environ, instance)
    if not password:
        raise SearchFailed(
            f"no password to ask the server with: run `{hint('init')}`, or set PASSAGEWAY_LOGIN_PASSWORD_FILE"
        )
    url = server_url(args, environ)
    await asyncio.to_thread(_check_access, url, password)
    http = mcp_http_client(url, password)
    try:
        async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
            result = await client.call_tool("recall", {"question": question})
    except Exception as error:  # the SDK raises many kinds; each becomes one line
        raise SearchFailed(_connection_problem(error, url)) from None
    text = "\n".join(getattr(part, "text", "") for part in result.content)
    if result.is_error:
        raise SearchFailed(f"the server could not answer: {text}")
    return text, answer_is_silent(result.meta)


def answer_is_silent(meta: object) -> bool:
    """Whether the ``recall`` tool's result was silence, from the shape the server attaches to it
    (``_meta.passageway.silent``), never from its text: the text differs while a source builds.
    A server without that shape (older than this command) counts as having answered."""
    shape = meta.get("passageway") if isinstance(meta, dict) else None
    return isinstance(shape, dict) and shape.get("silent") is True


def _check_access(url: str, password: str) -> None:
    """Fail with one line when nothing answers at ``url`` or it refuses the password.

    The MCP client reports both only as a generic error, so one plain request asks first.
    """
    from passageway.kernel.commands.instance import ServerUnreachable, request

    try:
        status, _ = request(f"{url}/mcp", password)
    except ServerUnreachable as error:
        if not error.reason:  # not an address at all
            raise SearchFailed(str(error)) from None
        raise SearchFailed(_unreachable(url, error.reason)) from None
    if status == 401:
        raise SearchFailed(
            f"{url} refused the password (HTTP 401); is it this instance's server? Check --url"
        )
    if status == 404:
        raise SearchFailed(f"{url} has no /mcp: it is not a passageway server; check --url")


def _unreachable(url: str, reason: str) -> str:
    return (
        f"no passageway answers at {url} ({reason}); start it with `{hint()}`, "
        "name its address with --url, or search the data folder with --local"
    )


def _connection_problem(error: BaseException, url: str) -> str:
    """One line for an error of the MCP exchange itself, after the server was reached."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return f"the MCP exchange with {url}/mcp failed ({type(error).__name__}: {error}); check --url"


async def _local(args: argparse.Namespace, question: str) -> tuple[str, bool, list[dict[str, Any]]]:
    """Recall in this process; sources with an empty index are built first."""
    import attrs

    from passageway.kernel.app import Kernel
    from passageway.kernel.commands.progress import ProgressBar, watch_build
    from passageway.kernel.config import load_settings
    from passageway.kernel.query.rendering import render_answer

    settings = load_settings(instance=args.instance, config_path=args.config)
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
