"""A page's storage format (Confluence's XHTML with ``ac:`` and ``ri:`` tags) as sections.

``h1`` to ``h3`` start sections with their heading trail; the SDK's
:class:`~passageway_sdk.MarkdownWriter` keeps lists, tables and code readable. The macros:

* ``code`` and ``noformat`` keep their text, as a fenced block;
* every macro with a rich-text body (info, note, warning, tip, panel, expand, section, column,
  excerpt, details, ...) keeps what its body holds;
* ``status`` keeps its title;
* every other macro (a table of contents, Jira issues, an attachments list, ...) is left out, with
  images, emoticons and placeholders;
* task lists become lists; a link keeps its text, or else the title of the page (or the name of
  the file) it points at; a ``<time>`` keeps its date.

A section longer than about 350 tokens is cut between paragraphs (or sentences).
"""

from __future__ import annotations

from typing import Any

from passageway_sdk import MarkdownWriter, cut_text, split_markdown

SECTION_CHARACTERS = 1400
"""About 350 tokens at four characters a token: the most a section holds before it is cut."""

MACRO_TAGS = ("ac:structured-macro", "ac:macro")
TEXT_MACROS = frozenset({"code", "noformat"})
SILENT_TAGS = frozenset({"ac:image", "ac:emoticon", "ac:placeholder", "ac:task-id", "ac:task-status"})
LAYOUT_TAGS = frozenset({"ac:layout", "ac:layout-section", "ac:layout-cell"})


class StorageWriter(MarkdownWriter):
    """Markdown text from storage format, following the macro rules of the module's docstring."""

    def __init__(self) -> None:
        super().__init__({"h1": 1, "h2": 2, "h3": 3})
        self._macros: list[dict[str, Any]] = []  # open macros: name, parameters, whether in its body
        self._parameter: tuple[str, list[str]] | None = None  # name and text of an open ac:parameter
        self._plain_body = False  # inside a code or noformat macro's ac:plain-text-body
        self._links: list[dict[str, Any]] = []  # open ac:link: the target's title, whether text was written
        self._silent = 0  # depth inside a dropped element

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {key: value or "" for key, value in attrs}
        if self._silent or tag in SILENT_TAGS:
            self._silent += not tag.startswith("ri:")  # ri: tags are empty elements
        elif tag in MACRO_TAGS:
            self._macros.append({"name": found.get("ac:name", "").lower(), "parameters": {}, "body": False})
        elif tag == "ac:parameter":
            self._parameter = (found.get("ac:name", ""), [])
        elif tag == "ac:plain-text-body":
            self._plain_body = bool(self._macros) and self._macros[-1]["name"] in TEXT_MACROS
            if self._plain_body:
                self.new_block()
                self.write("```\n")
        elif tag == "ac:rich-text-body":
            if self._macros:
                self._macros[-1]["body"] = True
            self.new_block()
        elif tag in LAYOUT_TAGS:
            self.new_block()
        elif tag == "ac:task-list":
            super().handle_starttag("ul", [])
        elif tag == "ac:task":
            super().handle_starttag("li", [])
        elif tag == "ac:link":
            self._links.append({"title": "", "written": False})
        elif tag in ("ri:page", "ri:attachment", "ri:blog-post") and self._links:
            self._links[-1]["title"] = found.get("ri:content-title") or found.get("ri:filename") or ""
        elif tag == "time" and found.get("datetime"):
            self.write(found["datetime"])
        elif not tag.startswith(("ac:", "ri:")):
            super().handle_starttag(tag, attrs)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if not tag.startswith("ri:"):
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if self._silent:
            self._silent -= not tag.startswith("ri:")
        elif tag in MACRO_TAGS and self._macros:
            macro = self._macros.pop()
            if macro["name"] == "status" and macro["parameters"].get("title"):
                self.write(f" {macro['parameters']['title']} ")
        elif tag == "ac:parameter" and self._parameter is not None:
            name, text = self._parameter
            if self._macros:
                self._macros[-1]["parameters"][name] = "".join(text).strip()
            self._parameter = None
        elif tag == "ac:plain-text-body":
            if self._plain_body:
                self.write("\n```")
                self.new_block()
            self._plain_body = False
        elif tag == "ac:rich-text-body":
            if self._macros:
                self._macros[-1]["body"] = False
            self.new_block()
        elif tag in LAYOUT_TAGS:
            self.new_block()
        elif tag == "ac:task-list":
            super().handle_endtag("ul")
        elif tag == "ac:link" and self._links:
            link = self._links.pop()
            if not link["written"] and link["title"]:
                self.write(link["title"])
        elif not tag.startswith(("ac:", "ri:")):
            super().handle_endtag(tag)

    def handle_data(self, data: str) -> None:
        if self._silent:
            return
        if self._parameter is not None:
            self._parameter[1].append(data)
        elif not self._macros or self._macros[-1]["body"]:  # text outside a macro's body is not shown
            if self._links and data.strip():
                self._links[-1]["written"] = True
            super().handle_data(data)

    def unknown_decl(self, data: str) -> None:
        """``<![CDATA[...]]>``: the text of a code macro or of a link's plain-text body."""
        if not data.startswith("CDATA[") or self._silent:
            return
        text = data.removeprefix("CDATA[")
        if self._plain_body:
            self.write(text)
        elif self._links and text.strip():
            self._links[-1]["written"] = True
            super().handle_data(text)


def storage_sections(storage: str) -> list[dict[str, str | None]]:
    """The sections of a page's storage format, each at most about 350 tokens long."""
    writer = StorageWriter()
    writer.feed(storage)
    writer.close()
    markdown = writer.markdown()
    sections: list[dict[str, str | None]] = []
    for section in split_markdown(markdown):
        parts = cut_text(section["text"] or "", SECTION_CHARACTERS)
        sections.extend({"heading": section["heading"], "text": part} for part in parts)
    return sections
