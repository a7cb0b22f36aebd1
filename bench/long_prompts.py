"""Recall on whole prompts: latency by prompt length, and a short question beside long prompts.

    uv run python bench/long_prompts.py                 # prints a Markdown block for docs/performance.md
    uv run python bench/long_prompts.py --rounds 40 --whole 3

It indexes the sample corpus (both folders, the built-in model; vectors come from the shared
cache after the first run) and serves it on 127.0.0.1, then over ``POST /recall``, as the hook
sends prompts:

* **by length**: questions of ``corpus/questions.toml`` buried in this repository's code (the
  question after the paste) at 100, 1,000, 5,000 and 20,000 characters; p50/p95 per length
  (target: 20,000 characters at p95 at most 2x a one-line question's p95);
* **beside long prompts**: one client asks one-line questions, first alone, then while four
  clients send 20,000-character prompts without pause (target: p95 at most 2x idle);
* ``--compare-queue`` also times the short question without the question queue
  (:mod:`passageway.kernel.query.question_queue`: typed questions go before those cut out of pastes),
  first come, first served, side by side in the same run;
* ``--whole N`` also times N prompts of 20,000 characters the way recall treated them before
  prompts were reduced (the whole prompt embedded and searched), for the record.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from common import ROOT
from common.corpus import PASSWORD, corpus_settings, open_bench_kernel, questions
from common.measure import log, ms, percentile

LENGTHS = (100, 1_000, 5_000, 20_000)
PASTE = "\n".join((ROOT / name).read_text("utf-8")
                  for name in ("kernel/query/recall.py", "kernel/index/sync.py"))


def prompt(question: str, length: int) -> str:
    """``question`` after code, ``length`` characters in all (a one-line question when shorter)."""
    room = length - len(question) - 2
    if room < 80:
        return question
    return PASTE[:room] + "\n\n" + question


async def timed_posts(session: Any, url: str, prompts: list[str]) -> list[float]:
    times = []
    for text in prompts:
        started = time.perf_counter()
        async with session.post(
            f"{url}/recall", json={"prompt": text}, headers={"Authorization": f"Bearer {PASSWORD}"}
        ) as response:
            await response.read()
            if response.status != 200:
                raise SystemExit(f"/recall answered {response.status}")
        times.append(time.perf_counter() - started)
    return times


async def beside_long_prompts(
    session: Any, url: str, asked: list[str], rounds: int
) -> tuple[list[float], list[float], int]:
    """One client's one-line questions alone, then while four clients send 20,000-character
    prompts without pause; the two lists of times and how many long prompts were sent."""
    idle = await timed_posts(session, url, [asked[n % len(asked)] for n in range(rounds)])
    stop = asyncio.Event()
    sent = 0

    async def long_client(offset: int) -> None:
        nonlocal sent
        number = offset
        while not stop.is_set():
            await timed_posts(session, url, [prompt(asked[number % len(asked)], 20_000)])
            sent += 1
            number += 4

    clients = [asyncio.create_task(long_client(n)) for n in range(4)]
    await asyncio.sleep(0.5)
    busy = await timed_posts(session, url, [asked[(n + 7) % len(asked)] for n in range(rounds)])
    stop.set()
    await asyncio.gather(*clients)
    return idle, busy, sent


async def run(rounds: int, whole: int, compare_queue: bool) -> list[str]:
    import aiohttp
    from aiohttp import web

    from passageway.kernel.plugins import build_plugin_manager
    from passageway.kernel.query.prompt import Asked
    from passageway.kernel.server import build_app

    asked = questions()
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="passageway-bench-long-") as temporary:
        settings, environ = corpus_settings(Path(temporary))
        manager = build_plugin_manager(environ)
        async with open_bench_kernel(settings, manager, environ) as kernel:
            log(f"building the sample corpus index with {kernel.embedder.name} ...")
            errors = await kernel.sync_once()
            if any(errors.values()):
                raise SystemExit(f"the corpus did not build: {errors}")
            app = build_app(kernel, start_sync=False, own_resources=False)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
            try:
                async with aiohttp.ClientSession() as session:
                    await timed_posts(session, url, asked[:10])  # warm up
                    lines += [
                        "| Prompt (question after code) | prompts | p50 ms | p95 ms |",
                        "| --- | ---: | ---: | ---: |",
                    ]
                    by_length = {}
                    for length in LENGTHS:
                        log(f"{rounds} prompts of {length} characters ...")
                        texts = [prompt(asked[n % len(asked)], length) for n in range(rounds)]
                        by_length[length] = times = await timed_posts(session, url, texts)
                        lines.append(
                            f"| {length:,} characters | {len(times)} | {ms(percentile(times, 0.5))} | "
                            f"{ms(percentile(times, 0.95))} |"
                        )
                    short_p95 = percentile(by_length[LENGTHS[0]], 0.95)
                    long_p95 = percentile(by_length[LENGTHS[-1]], 0.95)
                    lines += [
                        "",
                        f"20,000 characters against a one-line question at p95: {long_p95 / short_p95:.2f}x "
                        f"(target at most 2x: {'met' if long_p95 <= 2 * short_p95 else 'NOT met'}).",
                        "",
                    ]

                    ways = [("typed questions first", kernel.questions)]
                    if compare_queue:
                        ways.append(("first come, first served", None))
                    rows = [
                        "| One-line question | questions | p50 ms | p95 ms |",
                        "| --- | ---: | ---: | ---: |",
                    ]
                    verdicts = []
                    for label, batcher in ways:
                        kernel.questions = batcher
                        log(f"{label}: a short question alone, then beside four long prompts ...")
                        idle, busy, sent = await beside_long_prompts(session, url, asked, rounds)
                        idle_p95, busy_p95 = percentile(idle, 0.95), percentile(busy, 0.95)
                        rows += [
                            f"| {label}: alone | {len(idle)} | {ms(percentile(idle, 0.5))} | "
                            f"{ms(idle_p95)} |",
                            f"| {label}: beside four clients sending 20,000 characters ({sent} sent) | "
                            f"{len(busy)} | {ms(percentile(busy, 0.5))} | {ms(busy_p95)} |",
                        ]
                        verdicts.append(
                            f"{label}: beside long prompts against alone at p95 {busy_p95 / idle_p95:.2f}x "
                            f"(target at most 2x: {'met' if busy_p95 <= 2 * idle_p95 else 'NOT met'})."
                        )
                    kernel.questions = ways[0][1]
                    lines += [*rows, "", *verdicts, ""]
                if whole:
                    log(f"{whole} prompts of 20,000 characters embedded whole (the former way) ...")
                    import passageway.kernel.query.recall as recall_module

                    original = recall_module.asked
                    recall_module.asked = lambda text: (
                        original(text) if len(text) < 200 else Asked(text, "plain")
                    )
                    try:
                        times = []
                        for number in range(whole):
                            started = time.perf_counter()
                            await kernel.recall(prompt(asked[number], 20_000))
                            times.append(time.perf_counter() - started)
                    finally:
                        recall_module.asked = original
                    lines += [
                        f"The former way (the whole prompt embedded and searched, in process): "
                        f"{whole} prompts of 20,000 characters, p50 {ms(percentile(times, 0.5))} ms, "
                        f"slowest {ms(max(times))} ms.",
                        "",
                    ]
            finally:
                await runner.cleanup()
    return lines


def commit() -> str:
    import subprocess

    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=40, help="prompts per row (default 40)")
    parser.add_argument("--whole", type=int, default=0, help="also time N whole prompts the former way")
    parser.add_argument(
        "--compare-queue",
        action="store_true",
        help="also time the short question with one embedder call per question",
    )
    args = parser.parse_args()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = asyncio.run(run(args.rounds, args.whole, args.compare_queue))
    command = f"uv run python bench/long_prompts.py --rounds {args.rounds} --whole {args.whole}"
    if args.compare_queue:
        command += " --compare-queue"
    print(f"`{command}`, {started}, commit {commit()}:\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
