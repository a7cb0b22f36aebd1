"""One built HTML page to its title and sections, read with lxml (``docs/adr/0011``).

The page's main content is found by the generator's own markup (:data:`MAIN_CONTENT`, the first
rule that matches), else ``<main>``, ``[role=main]``, ``<article>`` or the body. Inside it, what a
generator adds around the author's text is removed (:data:`CHROME_TAGS`, :data:`CHROME_CLASSES`:
permalink marks, copy buttons, breadcrumbs, "edit this page", previous/next links, tables of
contents, tab labels). The main content is looked for among the tags its rules name (a scan of
every element only when none matches), and chrome in one walk that never enters a ``<pre>``:
CSS selectors compiled to XPath cost more than the rest of the page's reading together. Inline
text, code blocks and tables become Markdown in :mod:`passageway_passage_index.html_inline`.

What remains is written as the Markdown the chunker reads: the first ``h1`` is the page title, every
``h2`` and ``h3`` starts a section whose anchor is the id the generator's permalink points at (the
heading's ``id``, or its ``<section>``'s for Sphinx), ``h4`` to ``h6`` stay in their section as
``####`` lines, ``<pre>`` becomes one fenced code block, a ``<table>`` a pipe table, lists and
quotes their Markdown forms, and links ``[text](href)`` so that a list of nothing but links to
the site's own pages is recognised as navigation by the prepared search content.

The walk is iterative where documents nest (a hostile page may nest thousands of elements) and
linear in the page's size.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs
from lxml import etree

from passageway_passage_index.html_inline import (
    MAX_DEPTH,
    escape_line_start,
    escaped,
    fenced_block,
    inline_line,
    inline_markdown,
    pipe_table,
    text_of,
)
from passageway_passage_index.markdown import plain
from passageway_passage_index.site import SourceSection

MAIN_CONTENT: tuple[tuple[str | None, str | None, tuple[str, str] | None], ...] = (
    # (tag, class, attribute) - MkDocs with Material, then VitePress, Docusaurus, Sphinx (furo,
    # Read the Docs, alabaster) and the MkDocs default theme, then any page.
    ("article", "md-content__inner", None),
    ("div", "vp-doc", None),
    ("div", "theme-doc-markdown", None),
    ("article", None, ("role", "main")),
    ("div", None, ("itemprop", "articleBody")),
    ("div", "body", ("role", "main")),
    ("div", None, ("role", "main")),
    ("main", None, None),
    (None, None, ("role", "main")),
    ("article", None, None),
    ("body", None, None),
)
CHROME_TAGS = frozenset({
    "script", "style", "noscript", "template", "svg", "button", "form", "nav", "footer", "iframe",
})
CHROME_CLASSES = frozenset({
    "headerlink", "header-anchor", "hash-link", "md-content__button", "md-source-file",
    "theme-doc-footer", "theme-doc-breadcrumbs", "theme-doc-toc-mobile", "theme-doc-version-badge",
    "pagination-nav", "theme-edit-this-page", "toctree-wrapper", "tabbed-labels",
    "line-numbers-wrapper", "sr-only", "visually-hidden", "skip-to-content", "prev-next-area",
    "related-pages", "md-feedback", "edit-link", "vp-doc-footer",
})
"""Inside the main content, elements of these tags or classes (and ``role="tablist"``, and the
``<span class="lang">`` VitePress puts on a code block) are the generator's, not the author's."""
_BLOCKS = frozenset({
    "p", "div", "section", "article", "main", "aside", "header", "blockquote", "pre", "ul", "ol", "dl",
    "dt", "dd", "table", "h1", "h2", "h3", "h4", "h5", "h6", "figure", "figcaption", "details",
    "summary", "hr", "li", "center", "address",
})
_PARSER = etree.HTMLParser(remove_comments=True, remove_pis=True)
_OWN_FORMS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6", "pre", "table", "ul", "ol", "blockquote", "hr"})
"""The blocks :meth:`_Writer.block` writes in a form of their own; every other block holds blocks."""


@attrs.define
class HtmlPage:
    """What the index keeps of one HTML page."""

    title: str
    language: str | None
    generator: str
    """The ``<meta name="generator">`` content, empty if none."""
    redirect: bool
    """Whether the page is a redirect stub (``<meta http-equiv="refresh">``)."""
    fragment: bool
    """Whether the file has neither a ``<title>`` nor an ``<h1>``: a template or a piece of a page
    (a theme's ``overrides/main.html`` copied into the build), not a page."""
    sections: list[SourceSection]


def read_page(content: bytes) -> HtmlPage:
    """The title, language and sections of one built page (``content`` is its bytes)."""
    # lxml's etree parser, not lxml.html: its element classes cost a lookup per element visited.
    document = etree.fromstring(content if content.strip() else b"<p/>", _PARSER)
    _within_limits(_PARSER.error_log)
    if document is None:
        document = etree.fromstring(b"<p/>", _PARSER)
    language = document.get("lang") or None
    metas = _METAS(document)
    generator = " ".join(meta.get("content", "") for meta in metas if meta.get("name") == "generator")
    redirect = any((meta.get("http-equiv") or "").lower() == "refresh" for meta in metas)
    root = _main_content(document)
    _drop_all(_chrome(root))
    writer = _Writer()
    writer.blocks(root, 0)
    writer.end_section()
    title = writer.title or _title_of(document)
    fragment = document.find(".//title") is None and document.find(".//h1") is None
    return HtmlPage(title=title, language=language, generator=generator, redirect=redirect,
                    fragment=fragment, sections=writer.sections)


def _within_limits(errors: etree._ListErrorLog) -> None:
    """Raise :class:`ValueError` when libxml2 stopped at one of its limits: what follows was not
    read, and the page must not pass for an empty or short one."""
    for error in errors:
        if error.type_name == "ERR_RESOURCE_LIMIT" or "XML_PARSE_HUGE" in error.message:
            raise ValueError(
                f"it goes past the HTML parser's limits, elements nested deeper than 256 or one text "
                f"over 10 MB (libxml2: {error.message.strip()}); flatten its markup or split the page")


_METAS = etree.XPath("//meta")
_ROLES = etree.XPath("descendant::*/@role")
_Rule = tuple[int, str | None, tuple[str, str] | None]
_RULES_FOR_ANY_TAG: tuple[_Rule, ...] = tuple(
    (rank, name, attribute) for rank, (tag, name, attribute) in enumerate(MAIN_CONTENT) if tag is None
)
_RULES_BY_TAG: dict[str, tuple[_Rule, ...]] = {
    tag: tuple((rank, name, attribute) for rank, (rule_tag, name, attribute) in enumerate(MAIN_CONTENT)
               if rule_tag in (tag, None))
    for tag, _, _ in MAIN_CONTENT if tag is not None
}
"""For each tag a rule names, the rules (rank, class, attribute) an element of that tag may meet."""


def _main_content(document: etree._Element) -> etree._Element:
    """The first element, in document order, of the first rule of :data:`MAIN_CONTENT` that any
    element meets.

    lxml hands over only the elements of the tags the rules name (its tag filter runs in C; XPath
    predicates over every element cost more than parsing the page). Every element is read only
    when no rule with a tag matched before the first rule for any tag.
    """
    rank, found = _first_of_best_rule(document.iter(*_RULES_BY_TAG))
    if _RULES_FOR_ANY_TAG and rank > _RULES_FOR_ANY_TAG[0][0]:
        rank, found = _first_of_best_rule(document.iter(etree.Element))
    return found if found is not None else document


def _first_of_best_rule(elements: Iterable[etree._Element]) -> tuple[int, etree._Element | None]:
    """The best rank of a rule that one of ``elements`` (in document order) meets, and the first
    element meeting it; each attribute is read at most once per element."""
    best_rank, best = len(MAIN_CONTENT), None
    for element in elements:
        classes: list[str] | None = None
        values: dict[str, str | None] = {}
        for rank, name, attribute in _RULES_BY_TAG.get(element.tag, _RULES_FOR_ANY_TAG):
            if rank >= best_rank:
                break
            if name is not None:
                if classes is None:
                    classes = (element.get("class") or "").split()
                if name not in classes:
                    continue
            if attribute is not None:
                key, wanted = attribute
                if key not in values:
                    values[key] = element.get(key)
                if values[key] != wanted:
                    continue
            best_rank, best = rank, element
            break
        if best_rank == 0:
            break
    return best_rank, best


def _chrome(root: etree._Element) -> list[etree._Element]:
    """The outermost elements under ``root`` that are chrome, in document order, except inside
    ``<pre>``: a highlighted code block's hundreds of spans are never chrome.

    Neither a ``<pre>`` nor a chrome element is entered (what is inside the one is kept, what is
    inside the other goes with it), so the elements inside code blocks are never read. An element
    is chrome by its tag (:data:`CHROME_TAGS`), a class (:data:`CHROME_CLASSES`, or ``lang`` on a
    ``<span>``) or ``role="tablist"``; the few ``role`` attributes are fetched in one query
    instead of being asked of every element.
    """
    if root.tag == "pre" or next(root.iterancestors("pre"), None) is not None:
        return []
    tablists = {role.getparent() for role in _ROLES(root) if role == "tablist"}
    found = []
    walker = etree.iterwalk(root, events=("start",))
    next(walker)  # the main content itself, which stays
    for _, element in walker:
        tag = element.tag
        names = None if tag in CHROME_TAGS else element.get("class")
        if (
            tag in CHROME_TAGS
            or (names is not None and (not CHROME_CLASSES.isdisjoint(words := names.split())
                                       or (tag == "span" and "lang" in words)))
            or (tablists and element in tablists)
        ):
            found.append(element)
            walker.skip_subtree()
        elif tag == "pre":
            walker.skip_subtree()
    return found


def _drop_all(elements: list[etree._Element]) -> None:
    """Remove ``elements`` (none inside another, in document order) but keep the text that follows
    each: it joins the tail of the nearest kept element before it, or its parent's text.

    The tails going to one place are joined once at the end: appended one removal at a time, a
    run of 100,000 ``<button>x</button>tail`` copied the growing text each time (issue 38: 224 s).
    """
    dropped = set(elements)
    kept_before: dict[etree._Element, etree._Element | None] = {}
    joined: dict[tuple[etree._Element, bool], list[str]] = {}  # (element, its tail?) -> texts
    for element in elements:
        parent = element.getparent()
        if parent is None:
            continue
        previous = element.getprevious()
        # A dropped neighbour before it sends its tail where that neighbour's went.
        target = kept_before.get(previous) if previous is not None and previous in dropped else previous
        kept_before[element] = target
        if element.tail:
            key = (target, True) if target is not None else (parent, False)
            joined.setdefault(key, [key[0].tail or "" if key[1] else key[0].text or ""]).append(element.tail)
    for (owner, is_tail), texts in joined.items():
        if is_tail:
            owner.tail = "".join(texts)
        else:
            owner.text = "".join(texts)
    for element in elements:
        parent = element.getparent()
        if parent is not None:
            parent.remove(element)


def _title_of(document: etree._Element) -> str:
    found = document.find(".//title")
    text = " ".join(text_of(found).split()) if found is not None else ""
    for separator in (" | ", " — ", " - ", " · "):
        if separator in text:
            return text.split(separator)[0].strip()
    return text


@attrs.define
class _Writer:
    """Walks the main content and writes Markdown, one section at a time."""

    title: str = ""
    sections: list[SourceSection] = attrs.field(factory=list)
    level: int = 0
    name: str = ""
    anchor: str | None = None
    out: list[str] = attrs.field(factory=list)
    """The current section's blocks."""

    def end_section(self) -> None:
        text = "\n\n".join([block for block in self.out if block.strip()])
        if self.level or text:
            self.sections.append(SourceSection(self.level, self.name, self.anchor, text))
        self.out = []

    def blocks(self, element: etree._Element, depth: int) -> None:
        """Write the block-level content of ``element``: inline runs become paragraphs."""
        text = element.text
        run: list[str] = [escaped(text)] if text else []
        for child in element[:]:  # a slice costs less than an iterator
            tag = child.tag
            if tag in _BLOCKS:
                if run:
                    self._paragraph(run)
                    run = []
                if depth >= MAX_DEPTH or tag in _OWN_FORMS:
                    self.block(child, depth + 1)
                else:  # a container: its blocks, written in place
                    self.blocks(child, depth + 1)
            elif isinstance(tag, str):  # not a comment or processing instruction
                run.append(inline_markdown(child, depth + 1))
            tail = child.tail
            if tail:
                run.append(escaped(tail))
        if run:
            self._paragraph(run)

    def _paragraph(self, run: list[str]) -> None:
        # " ".join(split()) is re.sub(r"\s+", " ", ...).strip(), faster: both know white space
        # by str.isspace().
        text = " ".join("".join(run).split())
        if text:
            self.out.append(escape_line_start(text))

    def block(self, element: etree._Element, depth: int) -> None:
        tag = element.tag
        if depth > MAX_DEPTH:
            self._paragraph([text_of(element)])
        elif tag in ("h1", "h2", "h3"):
            self._heading(element, int(tag[1]))
        elif tag in ("h4", "h5", "h6"):
            text = inline_line(element, depth)
            if text:
                self.out.append(f"{'#' * int(tag[1])} {text}")
        elif tag == "pre":
            self.out.append(fenced_block(element))
        elif tag == "table":
            self.out.append(pipe_table(element, depth))
        elif tag in ("ul", "ol"):
            self.out.append(_list(element, depth))
        elif tag == "blockquote":
            inner = _Writer()
            inner.blocks(element, depth)
            quoted = "\n\n".join(inner.out)
            if quoted:
                self.out.append("\n".join(f"> {line}" if line else ">" for line in quoted.split("\n")))
        elif tag == "hr":
            return
        else:
            self.blocks(element, depth)

    def _heading(self, element: etree._Element, level: int) -> None:
        text = plain(inline_line(element, 0))
        if level == 1 and not self.title and not self.sections and not self.level:
            self.title = text
            return
        self.end_section()
        self.level = 2 if level == 1 else level
        self.name = text
        self.anchor = _anchor_of(element)


def _anchor_of(heading: etree._Element) -> str | None:
    """The id a reader's link to this heading uses: the heading's own, else its section's."""
    if heading.get("id"):
        return heading.get("id")
    parent = heading.getparent()
    if parent is not None and parent.get("id") and parent.tag in ("section", "div"):
        first = next((child for child in parent if isinstance(child.tag, str)), None)
        if first is heading:
            return parent.get("id")
    return None


def _list(element: etree._Element, depth: int) -> str:
    """A list as Markdown; an item's nested blocks are indented under its marker."""
    lines: list[str] = []
    number = int(element.get("start") or 1) if (element.get("start") or "1").isdigit() else 1
    for item in element[:]:
        if not isinstance(item.tag, str) or item.tag != "li":
            continue
        marker = f"{number}. " if element.tag == "ol" else "- "
        number += 1
        inner = _Writer()
        inner.blocks(item, depth + 1)
        body = "\n\n".join(inner.out) or ""
        indent = " " * len(marker)
        first, *rest = body.split("\n") if body else [""]
        lines.append(f"{marker}{first}".rstrip())
        lines.extend(f"{indent}{line}" if line else "" for line in rest)
    return "\n".join(lines)


