"""``passageway index`` on pages whose size made it quadratic (issue 38, item 4).

A table of one row of N cells over N rows of one cell was padded row by row (N = 5,000, a 145 KB
page: a 432 MB ``chunks.json``, 1.49 GB peak, 54 s), and the text after each removed chrome element
was appended to its neighbour one removal at a time (100,000 ``<button>x</button>tail``, a 3.2 MB
page: 224 s). Each runs through the real command; its output must stay proportional to the page
and its CPU time grow linearly with the input.
"""

from __future__ import annotations

import time
from pathlib import Path

from tests.reliability.conftest import scale
from tests.reliability.test_index_input import html_site, one_clear_line, run_index


def wide_table(cells: int) -> str:
    row = "<tr>" + "<td>c</td>" * cells + "</tr>"
    return "<h2>T</h2><table>" + row + "<tr><td>r</td></tr>" * cells + "</table>"


def chrome_run(count: int) -> str:
    return "<h2>B</h2><p>" + "<button>x</button>tail " * count + "</p>"


def cpu_seconds(site: Path) -> float:
    from passageway_passage_index import chunks_document

    start = time.process_time()
    chunks_document(site)
    return time.process_time() - start


def test_wide_tables_and_runs_of_chrome_are_indexed_in_linear_size_and_time(tmp_path, figures):
    shapes = {"table": (wide_table, scale(1_000, 5_000)), "chrome": (chrome_run, scale(20_000, 100_000))}
    for name, (page, count) in shapes.items():
        small = html_site(tmp_path / f"{name}-small", {"index.html": page(count // 10)})
        large = html_site(tmp_path / f"{name}-large", {"index.html": page(count)})
        small_seconds, large_seconds = cpu_seconds(small), cpu_seconds(large)
        # Ten times the input in at most about ten times the CPU time (twice that, for noise);
        # quadratic work would take a hundred times as long.
        assert large_seconds < 20 * small_seconds + 0.5, (name, small_seconds, large_seconds)
        status, _, err, seconds, peak = run_index(large)
        assert status == 0, err
        one_clear_line(err)
        page_bytes = (large / "index.html").stat().st_size
        output = (large / "ai" / "chunks.json").stat().st_size
        assert output < 10 * page_bytes, (name, page_bytes, output)
        figures.add("probe3_index", **{
            f"{name}_page_bytes": page_bytes, f"{name}_chunks_bytes": output,
            f"{name}_seconds": round(seconds, 2), f"{name}_peak_mib": round(peak, 1),
        })
