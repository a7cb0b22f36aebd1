"""The documentation site: ``mkdocs build --strict`` passes, every page is in the navigation, and
the ``llms.txt`` and ``llms-full.txt`` at the repository root are the ones the build writes.

After changing a page, refresh them with::

    uv run mkdocs build --strict && cp site/llms.txt site/llms-full.txt .
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REFRESH = "uv run mkdocs build --strict && cp site/llms.txt site/llms-full.txt ."


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(folder)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return folder


@pytest.mark.parametrize("name", ["llms.txt", "llms-full.txt"])
def test_the_llms_files_are_current(site, name):
    built = (site / name).read_text(encoding="utf-8")
    committed = (ROOT / name).read_text(encoding="utf-8")
    assert committed == built, f"{name} is out of date; refresh it with: {REFRESH}"


def test_every_page_is_on_the_site_and_in_llms_full(site):
    full = (site / "llms-full.txt").read_text(encoding="utf-8")
    for page in sorted((ROOT / "docs").rglob("*.md")):
        relative = page.relative_to(ROOT / "docs")
        folder = relative.parent if relative.name == "README.md" else relative.with_suffix("")
        assert (site / folder / "index.html").is_file(), f"{relative} is not on the site"
        title = next(line for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("# "))
        assert title[2:].strip().split("`")[0][:30] in full, f"{relative} is not in llms-full.txt"


def test_the_llms_index_links_every_page_to_a_file_of_the_repository(site):
    import re

    links = re.findall(r"\]\((/[^)]*)\)", (ROOT / "llms.txt").read_text(encoding="utf-8"))
    assert len(links) == len(list((ROOT / "docs").rglob("*.md")))
    for link in links:
        source = "README.md" if link == "/index.md" else link.strip("/").removesuffix("/index.md") + ".md"
        if source.endswith("adr.md"):
            source = "adr/README.md"
        assert (ROOT / "docs" / source).is_file(), f"llms.txt links {link}, which is no page in docs/"
