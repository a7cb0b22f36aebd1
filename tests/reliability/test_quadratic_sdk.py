"""Issue 32.10: the SDK's HTML to markdown step and its text cutter stay linear on hostile input.

The probe's case: N nested lists gave about N² bytes (144 KB of HTML became 64 MB, and a 0.9 MB
page did not finish in 100 s). Each input here is converted at two sizes, the second twice the
first: the output must stay within 3 times the input, and the processor time may grow by less
than 3 times (a quadratic step grows by 4) plus a little for timer noise (in the full form each
the best of two runs). Processor time of this thread, not wall-clock time: on a busy machine the
wall-clock time of the same conversion varied by more than 2 times from run to run. The
connectors' own converters (Confluence's storage format, Trilium's notes) run on the largest
input too.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from passageway_connector_confluence.storage import storage_sections
from passageway_connector_trilium.text import text_sections
from passageway_sdk import cut_text, html_to_markdown

from tests.reliability.conftest import scale

SIZE = scale(150_000, 900_000)  # bytes of the smaller input; the probe's page was 0.9 MB
INPUTS: dict[str, Callable[[int], str]] = {
    "nested lists": lambda size: "<ul><li>x" * (size // 9) + "</li></ul>" * (size // 9),
    "nested numbered lists": lambda size: "<ol><li>x" * (size // 9),
    "nested blocks": lambda size: "<blockquote><div>x" * (size // 18),
    "one long sentence": lambda size: "<p>" + "word " * (size // 5) + "</p>",
}


RUNS = scale(1, 2)  # processor time barely varies from run to run; the full form still takes the best of two


def timed(convert: Callable[[str], object], text: str, runs: int = RUNS) -> tuple[float, int]:
    """The best of ``runs`` in processor seconds of this thread, and the output size."""
    seconds = float("inf")
    for _ in range(runs):
        began = time.thread_time()
        out = convert(text)
        seconds = min(seconds, time.thread_time() - began)
    size = len(out) if isinstance(out, str) else sum(len(str(part)) for part in out)  # type: ignore[union-attr]
    return seconds, size


@pytest.mark.parametrize("name", list(INPUTS))
def test_hostile_html_converts_in_linear_time_and_size(name, figures):
    make = INPUTS[name]
    small, large = make(SIZE), make(2 * SIZE)
    small_seconds, _ = timed(html_to_markdown, small)
    large_seconds, large_out = timed(html_to_markdown, large)
    assert large_out < 3 * len(large), (name, len(large), large_out)
    assert large_seconds < 3 * small_seconds + 0.5, (name, small_seconds, large_seconds)
    for convert in (storage_sections, lambda html: text_sections(html)[0]):
        seconds, out = timed(convert, large, runs=1)
        assert out < 3 * len(large) and seconds < 3 * large_seconds + 1, (name, seconds, out)
    figures.add("quadratic_sdk", inputs=3)
    figures.add("quadratic_sdk", **{f"{name}: input bytes": len(large), f"{name}: output bytes": large_out,
                                   f"{name}: seconds": round(large_seconds, 2)})


def test_a_long_sentence_is_cut_in_linear_time(figures):
    small, large = "word " * (SIZE // 5), "word " * (2 * SIZE // 5)
    small_seconds, _ = timed(cut_text, small)
    large_seconds, _ = timed(cut_text, large)
    assert large_seconds < 3 * small_seconds + 0.5, (small_seconds, large_seconds)
    figures.add("quadratic_sdk", inputs=2)
