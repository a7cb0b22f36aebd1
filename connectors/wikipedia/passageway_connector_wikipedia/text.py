"""The HTML of a parsed page turned into plain-text sections, one per heading.

MediaWiki's parser output (``action=parse``, ``prop=text``) has templates expanded, which
wikitext lacks, so numbers from ``{{convert}}`` and names from ``{{lang}}`` survive. What is not
prose is left out: tables and infoboxes, reference markers and lists, navigation boxes, image
captions, hatnotes, the table of contents and edit links.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from html.parser import HTMLParser

HEADING_SEPARATOR = " › "

_VOID = frozenset(
    {
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    }
)
_DROPPED_TAGS = frozenset(
    {
        "table",
        "style",
        "script",
        "figure",
        "noscript",
        "audio",
        "video",
        "map",
        "annotation",
        "svg",
        "button",
    }
)
_DROPPED_CLASSES = frozenset(
    {
        "mw-editsection",
        "reference",
        "references",
        "reflist",
        "mw-references-wrap",
        "mw-cite-backlink",
        "navbox",
        "navbox-styles",
        "vertical-navbox",
        "infobox",
        "sidebar",
        "hatnote",
        "dablink",
        "thumb",
        "thumbinner",
        "toc",
        "toclimit-2",
        "toclimit-3",
        "noprint",
        "mw-empty-elt",
        "metadata",
        "ambox",
        "sistersitebox",
        "shortdescription",
        "catlinks",
        "printfooter",
        "mw-jump-link",
        "gallery",
        "mw-kartographer-container",
        "error",
        "portalbox",
        "navigation-not-searchable",
        "mwe-math-fallback-image-inline",
        "mwe-math-fallback-image-display",
        "haudio",
        "plainlinks-print",
        "geo-nondefault",
        "geo-multi-punct",
    }
)
_BLOCKS = frozenset(
    {
        "p",
        "div",
        "li",
        "dd",
        "dt",
        "blockquote",
        "pre",
        "ul",
        "ol",
        "dl",
        "tr",
        "section",
        "center",
        "caption",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
    }
)
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_DISPLAYSTYLE = re.compile(r"^\{\\displaystyle\s*(.*)\}$", re.DOTALL)


def _math_text(alttext: str) -> str:
    match = _DISPLAYSTYLE.match(alttext.strip())
    return (match.group(1) if match else alttext).strip()


class _SectionParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[tuple[int, str, list[str]]] = [(0, "", [])]  # (level, heading, paragraphs)
        self._stack: list[tuple[str, bool]] = []  # (tag, dropped here)
        self._dropping = 0
        self._heading_level = 0
        self._heading_parts: list[str] = []
        self._current: list[str] = []
        self._preformatted = 0

    def _flush(self) -> None:
        if self._preformatted:
            text = "".join(self._current).strip("\n")
        else:
            text = " ".join("".join(self._current).split())
        if text:
            self.sections[-1][2].append(text)
        self._current = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        classes = set((attributes.get("class") or "").split())
        drop = (
            tag in _DROPPED_TAGS
            or bool(classes & _DROPPED_CLASSES)
            or attributes.get("id") == "toc"
            or attributes.get("role") == "navigation"
            or (tag == "sup" and "reference" in classes)
        )
        if tag == "math" and not self._dropping:
            # Keep the formula as its TeX source; the MathML markup would read as noise.
            formula = _math_text(attributes.get("alttext") or "")
            if formula:
                self._text(f" {formula} ")
            drop = True
        if tag in _VOID:
            if tag == "br" and not self._dropping:
                self._text("\n" if self._preformatted else " ")
            return
        self._stack.append((tag, drop))
        if drop:
            self._dropping += 1
            return
        if self._dropping:
            return
        if tag in _HEADINGS:
            self._flush()
            self._heading_level = _HEADINGS[tag]
            self._heading_parts = []
        elif tag in _BLOCKS:
            self._flush()
            if tag == "pre":
                self._preformatted += 1
            if tag == "li":
                self._current.append("- ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID:
            return
        # Close up to the matching open tag; MediaWiki's output is balanced, this tolerates less.
        for depth in range(len(self._stack) - 1, -1, -1):
            if self._stack[depth][0] == tag:
                break
        else:
            return
        while len(self._stack) > depth:
            open_tag, dropped = self._stack.pop()
            if dropped:
                self._dropping -= 1
                continue
            if self._dropping:
                continue
            if open_tag in _HEADINGS and self._heading_level:
                heading = " ".join("".join(self._heading_parts).split())
                self.sections.append((self._heading_level, heading, []))
                self._heading_level = 0
            elif open_tag in _BLOCKS:
                self._flush()
                if open_tag == "pre":
                    self._preformatted -= 1

    def _text(self, data: str) -> None:
        if self._heading_level:
            self._heading_parts.append(data)
        else:
            self._current.append(data)

    def handle_data(self, data: str) -> None:
        if not self._dropping:
            self._text(data)

    def close(self) -> None:
        super().close()
        self._flush()


def html_sections(html: str, skip_headings: Collection[str] = ()) -> list[dict[str, str]]:
    """Protocol sections (``heading`` as the trail of parent headings, ``text``) of a page's HTML.

    ``skip_headings`` are compared case-insensitively (casefolded); a skipped heading takes its
    subsections with it. Sections without text are left out.
    """
    parser = _SectionParser()
    parser.feed(html)
    parser.close()
    skip = {heading.casefold() for heading in skip_headings}
    result: list[dict[str, str]] = []
    trail: list[tuple[int, str]] = []
    skipping_below: int | None = None
    for level, heading, paragraphs in parser.sections:
        if level:
            if skipping_below is not None and level > skipping_below:
                continue
            skipping_below = None
            if heading.casefold() in skip:
                skipping_below = level
                continue
            while trail and trail[-1][0] >= level:
                trail.pop()
            trail.append((level, heading))
        elif skipping_below is not None:
            continue
        text = "\n\n".join(paragraphs).strip()
        if not text:
            continue
        heading_trail = HEADING_SEPARATOR.join(name for _, name in trail if name) if level else ""
        result.append({"heading": heading_trail, "text": text} if heading_trail else {"text": text})
    return result
