"""The ``read`` tool's text (kernel/query/reading.py): a whole section or item, within its limit."""

from __future__ import annotations

import re

import pytest

from passageway.kernel.query.reading import ReadError, read_item
from passageway.kernel.store import StoredItem

ROWS = [
    (0, None, "Intro of the guide.", "d0"),
    (1, "Setup", "Install it:\n\n```console\n$ pip install tool\n```", "d1"),
    (2, "Setup › Linux", "On Linux, use the package.", "d2"),
    (3, "Setup › Linux", "Second part of the Linux section.", "d3"),
    (4, "Usage", "Run `tool --help`. " * 30, "d4"),
]


class Store:
    source = "docs"

    async def items(self, item_ids):
        return [StoredItem("guide.md", "Guide", "file:///srv/guide.md")] if "guide.md" in item_ids else []

    async def passages_of(self, item_id):
        return list(reversed(ROWS)) if item_id == "guide.md" else []


STORES = {"docs": Store()}


async def test_a_section_is_read_whole_by_its_heading_or_its_last_part():
    for section in ("Setup › Linux", "linux", "Guide › Setup › Linux"):
        text = await read_item(STORES, "docs", "guide.md", section)
        assert text.startswith("**Guide › Setup › Linux** (docs: guide.md)")
        assert "On Linux, use the package.\n\nSecond part of the Linux section." in text
        assert "Install it" not in text and "file://" not in text


async def test_an_item_is_read_in_order_with_its_code_blocks_kept():
    text = await read_item(STORES, "docs", "guide.md")
    assert text.index("Intro of the guide.") < text.index("```console\n$ pip install tool\n```")
    assert text.index("pip install") < text.index("Second part")


async def test_a_long_item_is_cut_at_the_limit_and_names_its_sections():
    text = await read_item(STORES, "docs", "guide.md", limit=300)
    body = text.split("\n\n", 1)[1]
    assert len(body.split("\n\n(cut here")[0]) <= 300
    assert "more characters. Pass `section` to read one section: Setup; Setup › Linux; Usage." in text


async def test_an_item_named_with_a_sections_anchor_is_read_as_the_item():
    """An answer names a section whose heading has an id as ``guide.md#linux``."""
    text = await read_item(STORES, "docs", "guide.md#linux", "Setup › Linux")
    assert text.startswith("**Guide › Setup › Linux** (docs: guide.md)")
    assert "On Linux, use the package." in text
    with pytest.raises(ReadError, match=re.escape("holds no item 'other.md#linux'")):
        await read_item(STORES, "docs", "other.md#linux")


@pytest.mark.parametrize(("source", "item", "section", "message"), [
    ("wiki", "guide.md", None, "no source 'wiki'; pass a source an answer named (configured: docs)"),
    ("docs", "other.md", None, "source 'docs' holds no item 'other.md'"),
    ("docs", "guide.md", "Windows",
     "item 'guide.md' has no section 'Windows'; its sections: Setup; Setup › Linux"),
])
async def test_what_the_index_does_not_hold_is_an_error_saying_what_to_pass(source, item, section, message):
    with pytest.raises(ReadError, match="^" + re.escape(message)):
        await read_item(STORES, source, item, section)
