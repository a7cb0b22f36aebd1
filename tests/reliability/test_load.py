"""Load on a real server: concurrent ``/recall`` clients and MCP clients, with memory before and after.

The full form runs 64 hook clients and 16 MCP clients (each its own session) for 60 s; the
reduced form 8 and 2 for a few seconds (each client sends at least two requests, however long
they take on a busy machine). Every request must succeed, and the server's memory
must not grow without bound (the session memory and the caches are bounded).
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from passageway.kernel.records import item_to_json
from tests.reliability.conftest import AUTH, scale
from tests.sync_helpers import WORDS, item

ITEMS = 400
LEAST = 2  # requests of each client, however busy the machine (then as many as the time allows)
QUESTIONS = [f"what happens at the {word} and the {other}?" for word in WORDS for other in WORDS[:4]]


async def hook_client(url: str, number: int, until: float, latencies: list[float], errors: list[str]) -> None:
    async with httpx2.AsyncClient(timeout=30) as http:
        sent = 0
        while sent < LEAST or time.monotonic() < until:
            question = QUESTIONS[(number * 7 + sent) % len(QUESTIONS)]
            started = time.perf_counter()
            try:
                response = await http.post(f"{url}/recall", headers=AUTH, json={
                    "prompt": question, "session_id": f"load-{number}-{sent // 20}", "cwd": "/srv/notes"})
                if response.status_code != 200 or "context" not in response.json():
                    errors.append(f"hook {response.status_code}: {response.text[:200]}")
            except Exception as error:  # counted, not raised: the figure is the point
                errors.append(f"hook {type(error).__name__}: {error}")
            latencies.append(time.perf_counter() - started)
            sent += 1


async def mcp_client(url: str, number: int, until: float, latencies: list[float], errors: list[str]) -> None:
    try:
        http = httpx2.AsyncClient(headers=AUTH, timeout=30)
        async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
            sent = 0
            while sent < LEAST or time.monotonic() < until:
                started = time.perf_counter()
                try:
                    question = QUESTIONS[(number + sent) % len(QUESTIONS)]
                    result = await client.call_tool("recall", {"question": question})
                    if result.is_error:
                        errors.append(f"mcp tool error: {result.content[0].text[:200]}")
                except Exception as error:
                    errors.append(f"mcp {type(error).__name__}: {error}")
                latencies.append(time.perf_counter() - started)
                sent += 1
    except Exception as error:
        errors.append(f"mcp session {type(error).__name__}: {error}")


def percentile(values: list[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def test_concurrent_recall_and_mcp_clients_get_no_error(server_factory, figures):
    server = server_factory(items=[item_to_json(item(n, sections=3)) for n in range(ITEMS)])
    server.start()
    server.wait_until(lambda report: report["status"] == "ok"
                      and report["sources"]["notes"]["items"] == ITEMS)
    hooks, mcps, seconds = scale(8, 64), scale(2, 16), scale(3.0, 60.0)
    with contextlib.suppress(Exception):  # warm up the caches once, so "before" is a steady state
        asyncio.run(_run(server.url, 2, 1, 1.0, [], [], [], []))
    rss_before = server.rss_kib()
    hook_latencies: list[float] = []
    mcp_latencies: list[float] = []
    hook_errors: list[str] = []
    mcp_errors: list[str] = []
    asyncio.run(_run(server.url, hooks, mcps, seconds, hook_latencies, mcp_latencies,
                     hook_errors, mcp_errors))
    rss_after = server.rss_kib()
    health = server.health()
    server.stop()
    server.assert_clean_log()
    assert hook_errors == [] and mcp_errors == [], (hook_errors + mcp_errors)[:10]
    assert health["status"] == "ok"
    assert len(hook_latencies) >= LEAST * hooks and len(mcp_latencies) >= LEAST * mcps
    figures.add(
        "load", hook_clients=hooks, mcp_clients=mcps, seconds=seconds,
        hook_requests=len(hook_latencies), mcp_calls=len(mcp_latencies),
        errors=len(hook_errors) + len(mcp_errors),
        hook_p50_ms=round(statistics.median(hook_latencies) * 1000, 1),
        hook_p95_ms=round(percentile(hook_latencies, 0.95) * 1000, 1),
        mcp_p50_ms=round(statistics.median(mcp_latencies) * 1000, 1),
        mcp_p95_ms=round(percentile(mcp_latencies, 0.95) * 1000, 1),
        rss_before_mib=round(rss_before / 1024, 1), rss_after_mib=round(rss_after / 1024, 1),
        items=ITEMS,
    )


async def _run(url: str, hooks: int, mcps: int, seconds: float, hook_latencies: list[float],
               mcp_latencies: list[float], hook_errors: list[str], mcp_errors: list[str]) -> None:
    until = time.monotonic() + seconds
    await asyncio.gather(
        *(hook_client(url, number, until, hook_latencies, hook_errors) for number in range(hooks)),
        *(mcp_client(url, number, until, mcp_latencies, mcp_errors) for number in range(mcps)),
    )
