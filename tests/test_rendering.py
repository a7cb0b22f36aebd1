"""What an answer shows of a source's names and addresses (kernel/query/rendering.py): bounded,
escaped and counted in the budget (issue 38, item 6)."""

from __future__ import annotations

import re

from passageway.kernel.query.reading import READ_CHARS, ReadError, read_item
from passageway.kernel.query.rendering import (
    BUDGET_TOKENS,
    fit_budget,
    render_answer,
    shown_anchor,
    shown_url,
)
from passageway.kernel.records import Answer, Hit, Related
from passageway.kernel.store import StoredItem

HUGE = 1_000_000
INJECTIONS = ["x)[click](https://evil.example/", "<script>alert(1)</script>", "../../etc/passwd",
              "a\nb\r\nc\x1b[31m\x00", "x" * HUGE]
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def hit(number: int, **fields: object) -> Hit:
    values: dict[str, object] = {
        "source": "notes", "item_id": f"note{number}.md", "title": f"Note {number}",
        "url": f"https://example.test/{number}", "heading": "Rivers", "score": 1.0 - number / 10,
        "similarity": 0.9 - number / 100, "text": "The Rhine flows north to the sea. " * 40,
    }
    values.update(fields)
    return Hit(**values)  # type: ignore[arg-type]


def test_an_unbounded_heading_id_url_title_or_item_stays_within_the_budget():
    # 38.6: a 1,000,000-character heading id gave a 1,000,084-character /recall context.
    huge = "y" * HUGE
    hostile = [
        hit(1, anchor=huge), hit(2, url="https://example.test/" + huge), hit(3, title=huge, heading=huge),
        hit(4, item_id=huge, path=(huge, huge)), hit(5, also_in=(huge,), source=huge),
    ]
    for alone in hostile:
        text = render_answer(fit_budget(Answer((alone,)), "rivers"))
        assert len(text) <= BUDGET_TOKENS * 4, len(text)
    three = Answer(tuple(hostile[:3]), related=(Related("notes", huge, huge, "https://e.test/" + huge),))
    assert len(render_answer(fit_budget(three, "rivers"))) <= BUDGET_TOKENS * 4


def test_ids_urls_and_titles_cannot_inject_lines_links_or_tags():
    for value in INJECTIONS[:4]:
        answer = fit_budget(Answer((
            hit(1, anchor=value), hit(2, url=f"https://example.test/{value}", title=value),
            hit(3, item_id=value, heading=value),
        )), "rivers")
        text = render_answer(answer)
        assert not RAW_CONTROL.search(text), repr(text)
        assert "[click]" not in text and "<script>" not in text and "#../../" not in text
        assert len([line for line in text.splitlines() if re.match(r"\d\. \*\*", line)]) == 3
    # A heading id is a fragment: kept readable when it is one, percent-encoded otherwise.
    assert shown_anchor("über-uns") == "#über-uns"
    assert shown_anchor("a b)[c") == "#a%20b%29%5Bc"
    assert shown_anchor("x" * 101) == ""


def test_only_addresses_a_reader_can_open_are_shown():
    assert shown_url("https://de.example/wiki/Rust_(language)") == "https://de.example/wiki/Rust_(language)"
    assert shown_url("http://[::1]:8080/a?b=c#d") == "http://[::1]:8080/a?b=c#d"
    assert shown_url("https://example.test/Über <b>") == "https://example.test/%C3%9Cber%20%3Cb%3E"
    for refused in ("javascript:alert(1)", "file:///etc/passwd", "data:text/html,<b>", "https://"
                    + "a" * 400, "https://ex ample.test/", "//example.test/x"):
        assert shown_url(refused) == "", refused
    # Not shown, the item names the hit instead.
    text = render_answer(Answer((hit(1, url="javascript:alert(1)", anchor="intro"),)))
    assert "javascript" not in text and "notes: note1.md#intro" in text


class Store:
    source = "docs"

    def __init__(self, title: str, url: str, heading: str, text: str) -> None:
        self.title, self.url, self.heading, self.text = title, url, heading, text

    async def items(self, item_ids):  # type: ignore[no-untyped-def]
        return [StoredItem("guide.md", self.title, self.url)] if "guide.md" in item_ids else []

    async def passages_of(self, item_id):  # type: ignore[no-untyped-def]
        return [(number, f"{self.heading} {number}", self.text, f"d{number}") for number in range(20)]


async def test_read_results_and_errors_stay_within_their_caps():
    # 38.6: `read` returned 1 MB (its cap did not count the title line or the address) and echoed
    # a 3 MB `item` in its error.
    huge = "z" * HUGE
    stores = {"docs": Store(huge, "https://example.test/" + huge, huge, "Passage text.\x1b[0m " * 1000)}
    text = await read_item(stores, "docs", "guide.md")  # type: ignore[arg-type]
    assert len(text) <= READ_CHARS and not RAW_CONTROL.search(text)
    for source, item, section in (("docs", "x" * 3_000_000, None), ("y" * 3_000_000, "guide.md", None),
                                  ("docs", "guide.md", "w" * 3_000_000)):
        try:
            await read_item(stores, source, item, section)  # type: ignore[arg-type]
        except ReadError as error:
            assert len(str(error)) < 3000, len(str(error))
        else:
            raise AssertionError("no error")


async def test_read_takes_back_an_item_and_a_heading_as_an_answer_escaped_them():
    class Bracketed:
        source = "docs"

        async def items(self, item_ids):  # type: ignore[no-untyped-def]
            return [StoredItem("a[1].md", "A", "")] if "a[1].md" in item_ids else []

        async def passages_of(self, item_id):  # type: ignore[no-untyped-def]
            return [(0, "Setup <beta>", "Install it.", "d0")]

    answer = render_answer(Answer((hit(1, item_id="a[1].md", heading="Setup <beta>"),)))
    assert "notes: a\\[1\\].md" in answer and "Setup \\<beta\\>" in answer
    stores = {"docs": Bracketed()}
    text = await read_item(stores, "docs", "a\\[1\\].md", "Setup \\<beta\\>")  # type: ignore[arg-type]
    assert "Install it." in text


def test_an_item_that_is_a_section_of_a_page_names_its_anchor_once():
    # The markdown connector's part of a long page: its id already ends with its section's anchor.
    part = hit(1, item_id="config.md#aws-module", url="file:///notes/config.md#aws-module",
               anchor="aws-module")
    text = render_answer(Answer((part, hit(2, url="file:///notes/note2.md", anchor="intro"))))
    lines = [line.strip() for line in text.splitlines()]
    assert "notes: config.md#aws-module" in lines and "notes: note2.md#intro" in lines
    assert "#aws-module#aws-module" not in text


def test_a_code_span_in_a_heading_is_shown_as_written_and_the_rest_escaped():
    # `\<module\>.disabled` read as code with backslashes in it; inside a code span nothing opens
    # a link or a tag, so only the text around it is escaped
    answer = render_answer(Answer((hit(1, heading="`<module>.disabled` and [x](https://evil.example/)"),)))
    assert "`<module>.disabled` and \\[x\\](https://evil.example/)" in answer
    answer = render_answer(Answer((hit(1, title="``a ` [b]`` <c>", heading="`[open"),)))
    assert "``a ` [b]`` \\<c\\>" in answer and "`\\[open" in answer
