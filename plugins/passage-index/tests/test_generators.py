"""`passageway index` on the output of real generators: Sphinx and MkDocs (Material and the default
theme) built here from ``fixtures/generated/sources``, VitePress and Docusaurus from the build
output committed in ``fixtures/generated`` (``fixtures/generated/README.md`` says how it was made).

The same small site (two pages about a tool called Lantern) is written for each; every build is
checked for anchors that exist in the page's HTML, for no generator chrome in any passage, and for
the defects D1-D6 of issue 31 as each generator renders them. Sphinx and MkDocs are built twice to
check that IDs and digests do not change across a clean rebuild.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lxml import html

from passageway.kernel.cli import main

GENERATED = Path(__file__).parent / "fixtures" / "generated"
SOURCES = GENERATED / "sources"
CHROME = (
    "Skip to content", "Edit this page", "Previous", "Next", "¶", "On this page", "Table of contents",
    "Copy to clipboard", "Made with", "Powered by", "Back to top", "Initializing search", "Navigation",
    "Quick search", "Lantern authors", "Direct link", "Search", "Page not found",
)


def build_sphinx(target: Path) -> Path:
    subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html", str(SOURCES / "sphinx"), str(target)],
                   check=True, capture_output=True, timeout=120)
    return target


def build_mkdocs(target: Path, theme: str) -> Path:
    source = target.parent / f"{target.name}-source"
    shutil.copytree(SOURCES / "mkdocs", source)
    config = source / "mkdocs.yml"
    config.write_text(config.read_text().replace("name: material", f"name: {theme}"))
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(config), "-d", str(target)],
                   check=True, capture_output=True, timeout=120, env={"NO_MKDOCS_2_WARNING": "1",
                                                                     "PATH": "/usr/bin:/bin"})
    return target


def committed(name: str, target: Path) -> Path:
    shutil.copytree(GENERATED / name, target)
    return target


@pytest.fixture(scope="module")
def sites(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("generated")
    return {
        "sphinx": build_sphinx(root / "sphinx"),
        "mkdocs-material": build_mkdocs(root / "material", "material"),
        "mkdocs": build_mkdocs(root / "mkdocs", "mkdocs"),
        "vitepress": committed("vitepress", root / "vitepress"),
        "docusaurus": committed("docusaurus", root / "docusaurus"),
    }


def index(site: Path, capsys) -> tuple[dict, list[dict]]:
    assert main(["index", str(site)]) == 0, capsys.readouterr().err
    summary = json.loads(capsys.readouterr().out)
    return summary, json.loads((site / "ai" / "chunks.json").read_text(encoding="utf-8"))["chunks"]


def page_file(site: Path, url: str) -> Path:
    path = url.split("#")[0].lstrip("/")
    return site / (path + "index.html" if path.endswith("/") or not path else path)


GENERATORS = ("sphinx", "mkdocs-material", "mkdocs", "vitepress", "docusaurus")


@pytest.mark.parametrize("name", GENERATORS)
def test_every_anchor_resolves_in_the_html_and_no_chrome_is_indexed(sites, capsys, name):
    site = sites[name]
    summary, chunks = index(site, capsys)
    assert summary["read"] == name.removesuffix("-material")
    assert {chunk["docId"] for chunk in chunks} >= {"index", "install"} or any(
        chunk["docId"].endswith("guide.install") for chunk in chunks)
    for chunk in chunks:
        document = html.parse(str(page_file(site, chunk["url"]))).getroot()
        if "#" in chunk["url"]:
            anchor = chunk["url"].split("#", 1)[1]
            assert document.get_element_by_id(anchor, None) is not None, chunk["url"]
        words = " ".join([chunk["text"], *chunk["search"]["paragraphs"]])
        for chrome in CHROME:
            assert chrome not in words, (name, chunk["id"], chrome)
    assert not any("404" in chunk["url"] or "search" in chunk["url"] for chunk in chunks)


@pytest.mark.parametrize("name", GENERATORS)
def test_the_defects_of_issue_31_do_not_happen_on_real_output(sites, capsys, name):
    _, chunks = index(sites[name], capsys)
    install = {tuple(chunk["headingPath"]): chunk for chunk in chunks if chunk["docId"].endswith("install")}
    # D1: a heading with `__init__` keeps its anchor.
    hooks = next(chunk for path, chunk in install.items() if path[:1] == ("The __init__ hooks",))
    assert "#" in hooks["url"]
    # D2: the generator's {#id} gives the anchor; the attribute is in no name (Sphinx has none).
    requirements = install[("Requirements",)]
    if name != "sphinx":
        assert requirements["url"].endswith("#requirements-list")
    # D3: the code block inside a list item is literal, not a flattened paragraph.
    assert "class Glow:" in hooks["search"]["literalLines"]
    assert not any("class Glow" in paragraph for paragraph in hooks["search"]["paragraphs"])
    # D4: a list of links to other sites is content.
    assert "rich" in requirements["search"]["paragraphs"]
    # D5: a ### before the first ## is a section with an anchor (Sphinx has no such page).
    if name != "sphinx":
        assert install[("Before you start",)]["url"].endswith("#before-you-start")
    assert install[("Upgrading",)]["url"].endswith("#upgrading")
    # D6: a commented-out section is not indexed.
    assert not any("Hidden draft" in chunk["text"] for chunk in chunks)


@pytest.mark.parametrize("builder", ["sphinx", "mkdocs"])
def test_ids_and_digests_are_identical_across_a_clean_rebuild(tmp_path, capsys, builder):
    first = build_sphinx(tmp_path / "a") if builder == "sphinx" else build_mkdocs(tmp_path / "a", "material")
    second = build_sphinx(tmp_path / "b") if builder == "sphinx" else build_mkdocs(tmp_path / "b", "material")
    _, before = index(first, capsys)
    _, after = index(second, capsys)
    def keys(chunks):
        return [(chunk["id"], chunk["url"], chunk["digest"]) for chunk in chunks]

    assert keys(before) == keys(after)
