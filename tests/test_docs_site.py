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


def broken_links(site: Path) -> list[str]:
    """Every relative ``href`` of the site's pages that leads to no file of the site."""
    import re
    from urllib.parse import unquote

    broken = []
    for page in sorted(site.rglob("*.html")):
        for href in re.findall(r'href="([^"]+)"', page.read_text(encoding="utf-8")):
            target = unquote(href.split("#", 1)[0].split("?", 1)[0])
            if not target or re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
                continue  # an anchor, an address or a link from the site's root (the theme's)
            resolved = (page.parent / target).resolve()
            if target.endswith("/") or resolved.is_dir():
                resolved = resolved / "index.html"
            if not resolved.is_file():
                broken.append(f"{page.relative_to(site)}: {href}")
    return broken


def test_every_link_of_the_site_leads_to_a_file_of_the_site(site):
    """Links from docs/ to the READMEs and schemas elsewhere in the repository are published
    (docs_site.py); a link to any other file outside docs/ fails the strict build."""
    assert broken_links(site) == []
    assert (site / "repository" / "connectors" / "markdown" / "index.html").is_file()
    assert (site / "repository" / "schemas" / "connector-protocol.schema.json").is_file()


def test_the_strict_build_fails_on_a_link_out_of_docs_that_is_not_published():
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
    settings = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)
    assert settings["strict"] is True
    assert settings["validation"]["links"]["not_found"] == "warn"
    assert settings["hooks"] == ["docs_site.py"]


def test_links_are_rewritten_to_the_published_files_and_left_alone_otherwise():
    sys.path.insert(0, str(ROOT))
    try:
        import docs_site
    finally:
        sys.path.remove(str(ROOT))
    files = frozenset(docs_site.published())
    assert "connectors/markdown/README.md" in files and "schemas/connector-protocol.schema.json" in files
    assert docs_site.site_link("../../connectors/markdown/README.md", "connectors/markdown.md", files) == (
        "../repository/connectors/markdown/README.md")
    assert docs_site.site_link("../README.md", "README.md", files) == "repository/README.md"
    # From a published README back into docs/.
    trilium = "repository/connectors/trilium/README.md"
    assert docs_site.site_link("../../docs/adr/0006-trust-store.md", trilium, files) == (
        "../../../adr/0006-trust-store.md")
    assert docs_site.site_link("docs/cli.md", "repository/README.md", files) == "../cli.md"
    assert docs_site.site_link("../pyproject.toml", "configuration.md", files) is None  # not published
    assert docs_site.site_link("server.md", "cli.md", files) is None
    assert docs_site.site_link("https://example.org/x.md", "cli.md", files) is None
