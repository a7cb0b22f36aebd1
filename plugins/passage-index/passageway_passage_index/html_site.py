"""A built site without the build contract: its HTML pages, as Sphinx, MkDocs, VitePress or
Docusaurus (or any static site generator) wrote them.

Every ``.html`` file under ``SITE_DIR`` is a page, in path order, except:

* files in folders whose name starts with ``_`` or ``.`` (Sphinx's ``_static``, ``_sources``,
  ``_images``), ``assets`` and ``node_modules``, and links (the index reads regular files only);
* the pages a generator makes for itself: ``404.html`` (or ``404/index.html``), the search page
  (``search.html``, ``search/index.html``), Sphinx's ``genindex.html`` and ``*modindex.html``;
* redirect stubs (a ``<meta http-equiv="refresh">``), files with neither a ``<title>`` nor an
  ``<h1>`` (templates a theme copied into the build), and pages with no text in their main content.

A page's URL is its path from the site root (``guide/install/index.html`` is ``/guide/install/``),
its ID that path without ``.html`` or ``/index``, ``/`` made ``.`` (``guide.install``; ``index``
for the home page), its type ``page``, its publication ``production|current|`` and the
``<html lang>`` (``und`` without one), and its digest the SHA-256 of the title and sections read.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path, PurePosixPath

from lxml import etree

from passageway_passage_index.files import UnreadablePage, read_bytes
from passageway_passage_index.html_page import HtmlPage, read_page
from passageway_passage_index.site import Page, Skip

GENERATORS = ("sphinx", "mkdocs", "vitepress", "docusaurus")
_SKIPPED_FOLDERS = frozenset({"assets", "node_modules"})
_SKIPPED_AT_ROOT = frozenset({"404.html", "404/index.html", "search.html", "search/index.html"})
_SKIPPED_ANYWHERE = re.compile(r"(?:^|/)(?:genindex|py-modindex|modindex|np-modindex)\.html$")
_NOT_IN_ID = re.compile(r"[#~\s]+")


def html_files(site_dir: Path) -> list[str]:
    """The paths (from ``site_dir``, with ``/``) of the HTML files that may be pages, sorted."""
    found: list[str] = []
    for folder, folders, files in os.walk(site_dir, followlinks=False):
        folders[:] = sorted(
            name for name in folders
            if not name.startswith(("_", ".")) and name not in _SKIPPED_FOLDERS
            and not (folder == str(site_dir) and name == "ai")
        )
        relative = PurePosixPath(Path(folder).relative_to(site_dir).as_posix())
        for name in files:
            if name.endswith((".html", ".htm")):
                path = (relative / name).as_posix().removeprefix("./")
                if path not in _SKIPPED_AT_ROOT and not _SKIPPED_ANYWHERE.search(path):
                    found.append(path)
    return sorted(found)


def read_html_site(site_dir: Path, skip: Skip) -> tuple[list[Page], str]:
    """The pages of a site read from its HTML, and the generator that built it.

    A page that cannot be read goes to ``skip``.
    """
    pages: list[Page] = []
    generators: list[str] = []
    taken: set[str] = set()
    for path in html_files(site_dir):
        file = site_dir / path
        if file.is_symlink():
            continue
        try:
            page = read_page(read_bytes(file, path))
        except UnreadablePage as problem:
            skip(problem)
            continue
        except (etree.ParserError, ValueError) as error:
            skip(UnreadablePage(f"{path} cannot be read as HTML ({error})"))
            continue
        generators.append(page.generator)
        if page.redirect or page.fragment or not any(section.text.strip() for section in page.sections):
            continue
        pages.append(_page(path, _url_of(path), page, taken))
    return pages, _generator(site_dir, generators)


def _url_of(path: str) -> str:
    if path == "index.html":
        return "/"
    if path.endswith("/index.html"):
        return "/" + path.removesuffix("index.html")
    return "/" + path


def _id_of(path: str, taken: set[str]) -> str:
    stem = path.rsplit(".", 1)[0]
    stem = stem.removesuffix("/index") if stem != "index" else stem
    base = _NOT_IN_ID.sub("-", stem.replace("/", ".")) or "index"
    candidate, number = base, 1
    while candidate in taken:
        number += 1
        candidate = f"{base}-{number}"
    taken.add(candidate)
    return candidate


def _page(path: str, url: str, page: HtmlPage, taken: set[str]) -> Page:
    title = page.title or _id_of(path, set())
    language = (page.language or "und").replace("|", "-")
    digest = hashlib.sha256()
    for part in (title, *(f"{s.level}\t{s.name}\t{s.anchor}\t{s.text}" for s in page.sections)):
        digest.update(part.encode("utf-8", "surrogatepass") + b"\x00")
    return Page(
        id=_id_of(path, taken),
        title=title,
        type="page",
        url=url,
        markdown_url=None,
        variant=f"production|current|{language}",
        digest=digest.hexdigest(),
        reader_filters=None,
        markdown="",
        sections=tuple(page.sections),
    )


def _generator(site_dir: Path, generators: list[str]) -> str:
    """``sphinx``, ``mkdocs``, ``vitepress``, ``docusaurus`` or ``html``: who built the site."""
    text = " ".join(generators).lower()
    for name in GENERATORS:
        if name in text:
            return name
    if (site_dir / "searchindex.js").exists() or (site_dir / "_static").is_dir():
        return "sphinx"
    if (site_dir / "search" / "search_index.json").exists():
        return "mkdocs"  # its default theme names no generator; its search plugin writes this
    return "html"
