"""``passageway eval``: measure retrieval quality on a throwaway index; ``eval compare`` side by side.

``passageway eval CASES...`` builds every configured source into a temporary index with the
configured embedder, asks each case in-process and prints a report. ``passageway eval compare
CASES...`` runs the same cases once per embedder (each its own fresh index and gate), or, with
``--rankers``, once per ranker on one index. See ``docs/evaluate.md``.

Exit codes: 0 finished, 1 ``--enforce`` below a target, a source that failed to sync or an
embedder failing on the questions, 2 a bad cases file, option or configuration.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs

from passageway.kernel.errors import EmbedderError, EvalError

NAME = "eval"
HELP = "measure retrieval quality with a cases file (`eval compare` compares embedders or rankers)"


def _thresholds(text: str) -> list[float]:
    values = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            value = float(part)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{part!r} is not a number; write --sweep 0.80,0.84,0.88"
            ) from None
        if not 0.0 <= value <= 1.0:
            raise argparse.ArgumentTypeError(f"{part} is outside 0 to 1")
        values.append(value)
    if not values:
        raise argparse.ArgumentTypeError("name at least one threshold, such as --sweep 0.80,0.84")
    return sorted(set(values))


def _threshold(text: str) -> float:
    return _thresholds(text)[0] if "," not in text else _fail_single(text)


def _fail_single(text: str) -> float:
    raise argparse.ArgumentTypeError(f"{text!r}: --threshold takes one number; use --sweep for several")


def _names(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise argparse.ArgumentTypeError("name at least one, separated by commas")
    return list(dict.fromkeys(names))


def _chunk_cap(text: str) -> int:
    if not text.isdigit() or not 100 <= int(text) <= 100_000:
        raise argparse.ArgumentTypeError(f"a number of characters from 100 to 100000, got {text!r}")
    return int(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = (
        "passageway eval CASES.toml [CASES.toml ...] [options]\n"
        "       passageway eval compare CASES.toml [CASES.toml ...] [options]"
    )
    parser.add_argument(
        "cases",
        nargs="+",
        metavar="CASES",
        help="cases files (TOML), merged in order; `compare` first compares instead",
    )
    parser.add_argument("--config", type=Path, metavar="PATH", help="use this passageway.toml")
    parser.add_argument("--model-dir", type=Path, metavar="DIR", help="folder of the default built-in model")
    parser.add_argument(
        "--data-dir",
        type=Path,
        metavar="DIR",
        help="keep the index in DIR and reuse it next time (refused if another embedder built it)",
    )
    parser.add_argument("--threshold", type=_threshold, metavar="X", help="relevance threshold for this run")
    parser.add_argument(
        "--chunk-cap",
        type=_chunk_cap,
        metavar="N",
        help="split sections into passages of at most N characters (default 1500) for this run's index",
    )
    parser.add_argument(
        "--sweep",
        type=_thresholds,
        metavar="X,Y,...",
        help="also run at each of these thresholds (the index is built once)",
    )
    parser.add_argument(
        "--ranker", metavar="NAME", help="the registered ranker to use (default: PASSAGEWAY_RANKER)"
    )
    parser.add_argument("--group", type=_names, metavar="A,B", help="only the cases of these groups")
    parser.add_argument("--enforce", action="store_true", help="exit 1 when a [targets] value is not met")
    parser.add_argument("--out", type=Path, metavar="DIR", help="write report.json and report.md into DIR")
    parser.add_argument(
        "--json", action="store_true", help="print the report as JSON (what --out writes to report.json)"
    )
    parser.add_argument(
        "--write",
        type=Path,
        metavar="PAGE",
        help="replace the marked results block of PAGE and add to its history",
    )
    parser.add_argument(
        "--block", metavar="NAME", help="with --write: the named block <!-- passageway:results:start NAME -->"
    )
    parser.add_argument(
        "--include-cases",
        action="store_true",
        help="also report every question and what was found (quotes your sources)",
    )
    parser.add_argument(
        "--embedder",
        action="append",
        metavar="NAME",
        help="eval compare: compare only these candidates (repeat it)",
    )
    parser.add_argument(
        "--rankers",
        type=_names,
        metavar="A,B",
        help="eval compare: compare these rankers on one index instead of embedders",
    )


def run(args: argparse.Namespace) -> int:
    cases_paths = list(args.cases)
    compare = cases_paths[0] == "compare"
    if compare:
        cases_paths = cases_paths[1:]
        if not cases_paths:
            raise EvalError("eval compare needs a cases file: passageway eval compare cases.toml")
        for option, value in (
            ("--enforce", args.enforce),
            ("--data-dir", args.data_dir),
            ("--ranker", args.ranker),
        ):
            if value:
                hint = " (use --rankers A,B to compare rankers)" if option == "--ranker" else ""
                raise EvalError(f"{option} is an option of a single run, not of eval compare{hint}")
    else:
        for option, value in (("--embedder", args.embedder), ("--rankers", args.rankers)):
            if value:
                raise EvalError(
                    f"{option} is an option of eval compare: passageway eval compare CASES {option} ..."
                )
    if args.chunk_cap is not None and args.data_dir is not None:
        raise EvalError(
            "--chunk-cap builds a fresh index; with --data-dir the reused index keeps the passages it "
            "has. Leave one of them out"
        )
    if args.block and not args.write:
        raise EvalError("--block names a block of the page given with --write")

    from passageway.builtin.eval.cases import load_cases
    from passageway.builtin.eval.page import check_page

    case_file = load_cases([Path(path) for path in cases_paths])
    if args.group:
        case_file = case_file.only_groups(args.group)
    if args.write:
        check_page(args.write, args.block)
    if args.out and args.out.exists() and not args.out.is_dir():
        raise EvalError(f"--out {args.out} exists and is not a folder")

    from passageway.kernel.config import load_settings

    settings = load_settings(instance=args.instance, config_path=args.config, model_dir=args.model_dir)
    if not settings.connectors:
        raise EvalError(f"{settings.config_path} has no [[connector]]: there is nothing to measure")
    if args.data_dir is not None and args.data_dir.resolve() == settings.data_dir.resolve():
        raise EvalError(
            f"--data-dir {args.data_dir} is the server's live data folder; eval would sync that index while "
            "the server uses it. Give a folder of its own"
        )
    if compare:
        return asyncio.run(_compare(args, settings, case_file))
    return asyncio.run(_single(args, settings, case_file))


# ---------------------------------------------------------------------------------------------
# A single run
# ---------------------------------------------------------------------------------------------


def _now() -> tuple[str, str]:
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%d"), now.strftime("%H:%M:%SZ")


def _version(settings: Any) -> str:
    from passageway import __version__

    return settings.app_version or __version__


def _failed_sources(index: Any) -> int:
    failed = index.failed
    for source in failed:
        print(f"passageway: eval: source {source.name!r} failed to sync: {source.error}", file=sys.stderr)
    if failed:
        print(
            "passageway: eval: no questions asked, because a partial index gives misleading numbers",
            file=sys.stderr,
        )
        return 1
    return 0


def _run_result(
    settings: Any, engine: Any, ranker: str, threshold: float, index: Any, outcomes: Any, sweep: Any,
    case_file: Any, label: str | None = None,
) -> Any:
    """One run's result, stamped with the time it finished."""
    from passageway.builtin.eval.report import RunResult, machine_line

    date, time_of_day = _now()
    extra = {} if label is None else {"label": label}
    return RunResult(
        date=date,
        time=time_of_day,
        version=_version(settings),
        embedder_name=engine.embedder_name,
        embedder_dim=engine.embedder_dim,
        ranker=ranker,
        threshold=threshold,
        index=index,
        machine=machine_line(),
        outcomes=outcomes,
        sweep=sweep,
        targets=case_file.targets,
        **extra,
    )


async def _single(args: argparse.Namespace, settings: Any, case_file: Any) -> int:
    from passageway.builtin.eval.engine import KernelEngine
    from passageway.builtin.eval.progress import EvalProgress
    from passageway.builtin.eval.runner import ask_sweep

    ranker = args.ranker or settings.ranker
    watch = EvalProgress()
    async with KernelEngine.open(
        settings, data_dir=args.data_dir, chunk_cap=args.chunk_cap, progress=watch.line
    ) as engine:
        engine.ranker(ranker)  # an unknown ranker is exit 2 before the index is built
        index = await watch.build(engine)
        if _failed_sources(index):
            return 1
        threshold = args.threshold if args.threshold is not None else engine.default_threshold
        try:
            asking = watch.asking(engine, case_file.cases, threshold, args.sweep or [])
            outcomes, sweep = await ask_sweep(asking, case_file.cases, threshold, args.sweep or [], ranker)
        except EmbedderError as error:
            print(f"passageway: eval: the embedder failed on a question: {error}", file=sys.stderr)
            return 1
        result = _run_result(settings, engine, ranker, threshold, index, outcomes, sweep, case_file)
    from passageway.builtin.eval.publish import publish

    publish(args, [result], axis=None)
    return _enforce(args, result, case_file)


def _enforce(args: argparse.Namespace, result: Any, case_file: Any) -> int:
    from passageway.builtin.eval.metrics import check_targets

    if not args.enforce:
        return 0
    if not case_file.has_targets or not case_file.targets:
        print(
            "passageway: eval: --enforce: the cases file has no [targets], so there is nothing to check",
            file=sys.stderr,
        )
        return 0
    missed = [
        name for name, entry in check_targets(result.metrics, case_file.targets).items() if not entry["met"]
    ]
    if missed:
        print(f"passageway: eval: below the targets: {', '.join(missed)}", file=sys.stderr)
        return 1
    return 0


# ---------------------------------------------------------------------------------------------
# Comparing embedders or rankers
# ---------------------------------------------------------------------------------------------


def _candidates(args: argparse.Namespace, settings: Any) -> list[tuple[str, Any]]:
    available = {"default": settings.embedder, **dict(settings.file.embedders)}
    if args.embedder:
        unknown = [name for name in args.embedder if name not in available]
        if unknown:
            raise EvalError(
                f"--embedder {', '.join(unknown)}: not in {settings.config_path}; the candidates are: "
                f"{', '.join(available)}"
            )
        names = list(dict.fromkeys(args.embedder))
    else:
        names = list(available)
    if args.rankers:
        if len(names) > 1 and args.embedder:
            raise EvalError("--rankers compares rankers on one index: give at most one --embedder")
        names = names[:1] if not args.embedder else names
    elif len(names) < 2:
        raise EvalError(
            "eval compare needs at least two embedders: add [embedders.NAME] tables to "
            f"{settings.config_path} or name them with --embedder (or compare rankers with --rankers)"
        )
    return [(name, available[name]) for name in names]


async def _compare(args: argparse.Namespace, settings: Any, case_file: Any) -> int:
    import contextlib

    from passageway.builtin.eval.engine import KernelEngine
    from passageway.builtin.eval.progress import EvalProgress
    from passageway.builtin.eval.runner import ask_sweep

    watch = EvalProgress()
    candidates = _candidates(args, settings)
    rankers = args.rankers or [settings.ranker]
    results = []
    async with contextlib.AsyncExitStack() as stack:
        # Every embedder starts before the first index is built: one that cannot start costs nothing.
        engines = []
        for name, embedder_settings in candidates:
            candidate_settings = attrs.evolve(
                settings, file=attrs.evolve(settings.file, embedder=embedder_settings)
            )
            try:
                engine = await stack.enter_async_context(
                    KernelEngine.open(candidate_settings, chunk_cap=args.chunk_cap, progress=watch.line)
                )
            except EvalError as error:
                raise EvalError(f"embedder {name!r}: {error}") from None
            for ranker in rankers:
                engine.ranker(ranker)
            engines.append((name, engine))
        for name, engine in engines:
            index = await watch.build(engine)
            if _failed_sources(index):
                return 1
            threshold = args.threshold if args.threshold is not None else engine.default_threshold
            for ranker in rankers:
                try:
                    asking = watch.asking(engine, case_file.cases, threshold, args.sweep or [])
                    outcomes, sweep = await ask_sweep(
                        asking, case_file.cases, threshold, args.sweep or [], ranker
                    )
                except EmbedderError as error:
                    print(
                        f"passageway: eval: embedder {name!r} failed on a question: {error}", file=sys.stderr
                    )
                    return 1
                results.append(
                    _run_result(
                        settings, engine, ranker, threshold, index, outcomes, sweep, case_file,
                        label=ranker if args.rankers else name,
                    )
                )
    # One date for the whole comparison, so that its history lines belong together.
    results = [attrs.evolve(result, date=results[0].date, time=results[0].time) for result in results]
    from passageway.builtin.eval.publish import publish

    publish(args, results, axis="ranker" if args.rankers else "embedder")
    return 0
