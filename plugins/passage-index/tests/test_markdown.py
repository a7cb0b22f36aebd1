"""plain() skips each step whose mark is absent from the text; it must give what running every
step always gives (the reference below is the function before that change)."""

from __future__ import annotations

import itertools
import re

from passageway_passage_index import markdown
from passageway_passage_index.markdown import plain


def plain_every_step(text: str) -> str:
    text = markdown._IMAGE.sub(r"\1", text)
    text = markdown._LINK.sub(r"\1", text)
    text = markdown._AUTOLINK.sub(r"\1", text)
    spans: list[str] = []

    def keep_span(match: re.Match[str]) -> str:
        spans.append(match.group(2).strip())
        return f"\x00{len(spans) - 1}\x00"

    text = markdown._CODE_SPAN.sub(keep_span, text)
    text = markdown._without_emphasis(text)
    text = markdown._ESCAPE.sub(r"\1", text)
    text = re.sub(r"\x00(\d+)\x00", lambda match: spans[int(match.group(1))], text)
    return " ".join(text.split())


PIECES = ["word", "snake_case", "`a_b`", "`` x ` y ``", "*em*", "_em_", "**b**", "\\*", "[t](u)", "![i](p)",
          "<https://x.org>", "`", "*", "_", "\\", "[", "\x00", " ", "\n", "é"]


def test_plain_gives_what_every_step_gives():
    for size in (1, 2, 3):
        for parts in itertools.product(PIECES, repeat=size):
            text = " ".join(parts)
            assert plain(text) == plain_every_step(text), repr(text)
