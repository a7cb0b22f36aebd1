"""`passageway index` on hostile site folders (issue 32, items 4 and 11), run as the real command.

* symbolic links: an ``ai/`` that links out of the site, links planted at ``ai/chunks.json`` and
  at the temporary names, a page or twin that links outside: nothing outside the site is written
  or read;
* quadratic inputs: one long paragraph of unmatched Markdown marks, many equal headings: linear
  time (the larger input, ten times the smaller, takes at most about ten times as long);
* files that are not files: a named pipe as a page, a twin or ``documents.json``: no hang;
* deep JSON and deep HTML: one clear line, no traceback;
* a huge single-paragraph page: refused by size with bounded memory.

Every run ends with exit status 0 (a bad page skipped with one warning line) or 2 (one error
line), never a traceback. The reduced form uses smaller inputs; ``RELIABILITY_FULL=1`` uses the
sizes of the probe (80 KB paragraph, 100,000 headings, 100 MB page).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.reliability.conftest import scale

SECTION = "index_input"
SECONDS = 60


# The command in a child that writes its own peak memory (KiB) to the file named last. VmHWM, not
# ru_maxrss: Linux keeps ru_maxrss across fork and exec, so a child would report the size of the
# test process that started it (hundreds of MiB once a suite has loaded a model).
CHILD = """
import re, sys
from passageway.kernel.cli import main
try:
    status = main(sys.argv[1:-1])
finally:
    with open("/proc/self/status") as status_file, open(sys.argv[-1], "w") as peak:
        peak.write(re.search(r"VmHWM:\\s+(\\d+)", status_file.read()).group(1))
sys.exit(status)
"""


def run_index(site: Path, *options: str) -> tuple[int, str, str, float, float]:
    """Exit status, stdout, stderr, seconds and the child's peak memory (MiB) of one run."""
    peak_file = site.parent / f".peak-{site.name}"
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, "index", str(site), *options, str(peak_file)],
                              capture_output=True, timeout=SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail(f"passageway index {site.name} did not finish in {SECONDS} s")
    seconds = time.perf_counter() - start
    peak = int(peak_file.read_text() or 0) / 1024 if peak_file.exists() else 0.0
    return done.returncode, done.stdout.decode(), done.stderr.decode(), seconds, peak


def one_clear_line(err: str) -> None:
    assert "Traceback" not in err, err
    assert err.count("\n") <= 1, err


def contract_site(folder: Path, twins: dict[str, str | None]) -> Path:
    """A build-contract site; a twin of None is left for the test to make."""
    folder.mkdir(parents=True)
    documents = [{
        "id": name, "title": name, "type": "guide", "url": f"/{name}", "markdownUrl": f"/{name}.md",
        "publication": {"channel": "c", "version": "v", "language": "en"}, "digest": "a" * 64,
    } for name in twins]
    (folder / "documents.json").write_text(json.dumps({"schemaVersion": 1, "documents": documents}))
    for name, text in twins.items():
        if text is not None:
            (folder / f"{name}.md").write_text(text)
    return folder


def html_site(folder: Path, pages: dict[str, str]) -> Path:
    folder.mkdir(parents=True)
    for name, body in pages.items():
        (folder / name).write_text(f"<html lang='en'><head><title>{name}</title></head><body><main>"
                                   f"<h1>{name}</h1>{body}</main></body></html>")
    return folder


def record(figures, seconds: float, peak: float, **counts: int) -> None:
    figures.add(SECTION, runs=1, **counts)
    entry = figures.sections[SECTION]
    entry["slowest_s"] = round(max(entry.get("slowest_s", 0), seconds), 2)
    entry["peak_mib"] = round(max(entry.get("peak_mib", 0), peak), 1)


# -- item 4: nothing is written outside the site folder -------------------------------------------


def test_an_ai_folder_that_links_out_of_the_site_is_refused(tmp_path, figures):
    site = html_site(tmp_path / "site", {"index.html": "<p>Text.</p>"})
    outside = tmp_path / "outside"
    outside.mkdir()
    (site / "ai").symlink_to(outside)
    status, _, err, seconds, peak = run_index(site)
    assert status == 2 and "is a symbolic link" in err
    one_clear_line(err)
    assert list(outside.iterdir()) == []
    record(figures, seconds, peak, refused=1)


@pytest.mark.parametrize("planted", ["chunks.json", ".chunks.json.tmp", "embeddings.json"])
def test_links_planted_in_ai_are_replaced_never_written_through(tmp_path, figures, planted):
    site = html_site(tmp_path / "site", {"index.html": "<p>Text.</p>"})
    target = tmp_path / "victim.txt"
    target.write_text("precious")
    (site / "ai").mkdir()
    (site / "ai" / planted).symlink_to(target)
    status, _, err, seconds, peak = run_index(site)
    assert status == 0, err
    assert target.read_text() == "precious"
    assert not (site / "ai" / "chunks.json").is_symlink()
    assert json.loads((site / "ai" / "chunks.json").read_text())["chunks"]
    leftovers = [path for path in (site / "ai").iterdir() if path.name.endswith(".tmp")]
    assert all(path.is_symlink() for path in leftovers)  # only the planted link, if any
    record(figures, seconds, peak, links_planted=1)


def test_pages_and_twins_that_link_outside_are_not_read(tmp_path, figures):
    secret = tmp_path / "secret.md"
    secret.write_text("## Secret\n\nThe launch code is 0000.\n")
    site = contract_site(tmp_path / "site", {"a": "## A\n\nFine.\n", "b": None})
    (site / "b.md").symlink_to(secret)
    status, _, err, seconds, peak = run_index(site)
    assert status == 2 and "leads outside the site folder" in err
    one_clear_line(err)
    html = html_site(tmp_path / "html", {"index.html": "<p>Fine.</p>"})
    (html / "secret.html").symlink_to(secret)
    status, _, err, more, _ = run_index(html)
    assert status == 0, err
    assert "launch code" not in (html / "ai" / "chunks.json").read_text()
    record(figures, max(seconds, more), peak, refused=1)


# -- item 11: hostile input -----------------------------------------------------------------------


def _cpu_seconds(site: Path) -> float:
    """CPU seconds of reading and chunking ``site`` in this process (steadier than wall time on a
    loaded machine)."""
    from passageway_passage_index import chunks_document

    start = time.process_time()
    chunks_document(site)
    return time.process_time() - start


def _linear(small: float, large: float) -> bool:
    """Ten times the input in at most about ten times the time (twice that, for noise)."""
    return large < 20 * small + 0.5


@pytest.mark.parametrize("mark", ["*a ", "_a ", "[a ", "[a](", "`a "])
def test_a_long_paragraph_of_unmatched_marks_takes_linear_time(tmp_path, figures, mark):
    size = scale(8_000, 80_000)
    small = contract_site(tmp_path / "small", {"p": "## P\n\n" + mark * (size // 10 // len(mark)) + "\n"})
    large = contract_site(tmp_path / "large", {"p": "## P\n\n" + mark * (size // len(mark)) + "\n"})
    small_seconds, large_seconds = _cpu_seconds(small), _cpu_seconds(large)
    assert _linear(small_seconds, large_seconds), (small_seconds, large_seconds)
    status, _, err, seconds, peak = run_index(large)
    assert status == 0, err
    one_clear_line(err)
    record(figures, seconds, peak, long_paragraph=1)


def test_many_equal_headings_take_linear_time(tmp_path, figures):
    count = scale(10_000, 100_000)
    small = contract_site(tmp_path / "small", {"p": "## Same\n\nx\n\n" * (count // 10)})
    large = contract_site(tmp_path / "large", {"p": "## Same\n\nx\n\n" * count})
    small_seconds, large_seconds = _cpu_seconds(small), _cpu_seconds(large)
    assert _linear(small_seconds, large_seconds), (small_seconds, large_seconds)
    status, _, err, seconds, peak = run_index(large)
    assert status == 0, err
    record(figures, seconds, peak, repeated_headings=count)


@pytest.mark.parametrize("where", ["twin", "page", "documents.json"])
def test_a_named_pipe_is_refused_without_hanging(tmp_path, figures, where):
    if where == "page":
        site = html_site(tmp_path / "site", {"index.html": "<p>Fine.</p>"})
        os.mkfifo(site / "pipe.html")
    else:
        site = contract_site(tmp_path / "site", {"a": "## A\n\nFine.\n", "b": None})
        os.mkfifo(site / "b.md")
        if where == "documents.json":
            (site / "documents.json").unlink()
            os.mkfifo(site / "documents.json")
    status, out, err, seconds, peak = run_index(site)
    one_clear_line(err)
    assert "is not a regular file" in err
    if where == "documents.json":
        assert status == 2
    else:
        assert status == 0 and json.loads(out)["skipped"] == 1
        assert run_index(site, "--strict")[0] == 2
    record(figures, seconds, peak, named_pipes=1)


@pytest.mark.parametrize("file", ["documents.json", "search-index.json", "page.html"])
def test_deep_nesting_gives_one_clear_line(tmp_path, figures, file):
    depth = scale(20_000, 200_000)
    if file == "page.html":
        deep = "<div>" * depth + "<p>Deep.</p>" + "</div>" * depth
        site = html_site(tmp_path / "site", {"index.html": "<p>Fine.</p>", "page.html": deep})
    else:
        site = contract_site(tmp_path / "site", {"a": "## A\n\nFine.\n"})
        (site / file).write_text("[" * depth + "]" * depth)
    status, _, err, seconds, peak = run_index(site)
    one_clear_line(err)
    if file == "page.html":
        assert status == 0, err
    else:
        assert status == 2 and file in err
    record(figures, seconds, peak, deep_inputs=1)


def test_a_huge_single_paragraph_page_is_refused_with_bounded_memory(tmp_path, figures):
    megabytes = scale(24, 100)
    site = contract_site(tmp_path / "site", {"a": "## A\n\nFine.\n", "big": None})
    with (site / "big.md").open("w") as handle:
        handle.write("## Big\n\n")
        for _ in range(megabytes):
            handle.write("word " * (1024 * 1024 // 5))
    status, out, err, seconds, peak = run_index(site)
    assert status == 0 and json.loads(out)["skipped"] == 1, err
    assert "big.md is" in err and "bytes, over the" in err
    one_clear_line(err)
    assert peak < 400, peak  # MiB: the page is never read
    record(figures, seconds, peak, huge_pages=1)
