"""The one rule of a fenced code block, for every reader of Markdown in passageway.

A fence is a run of three or more backticks or three or more tildes (:data:`FENCE_RUN`). In a
document it opens a block when at most three spaces precede it (:data:`FENCE`, as CommonMark has
it), and the block ends at a line that holds only the same character, at least as many times
(:func:`closes_fence`). Chunking, the eval page's markers, the passage index's Markdown and the
reading of a prompt all ask these; the SDK carries its own copy because it depends on nothing.
"""

from __future__ import annotations

import re

FENCE_RUN = r"(`{3,}|~{3,})"
"""The run that makes a fence, as a regular-expression group (group 1 where it is used first)."""

FENCE = re.compile(r"^ {0,3}" + FENCE_RUN)
"""A line of a document that opens a fenced block; group 1 is the run."""


def closes_fence(opening: str, line: str) -> bool:
    """Whether ``line`` closes the block the run ``opening`` opened: after its spaces it holds
    nothing but ``opening``'s character, at least as many times."""
    stripped = line.strip()
    return stripped.startswith(opening[0] * len(opening)) and not stripped.strip(opening[0])
