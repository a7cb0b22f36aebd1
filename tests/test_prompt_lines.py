"""Prose or material (kernel/query/prompt_lines.py): which lines were typed and which pasted."""

from __future__ import annotations

from passageway.kernel.query.prompt_lines import line_kinds


def test_a_line_of_code_that_ends_in_a_question_mark_stays_material():
    assert line_kinds(["x = a ? b : c;", "    if ready?", "ERROR: is the port taken?"]) == ["material"] * 3


def test_markdown_headings_and_lists_are_prose():
    kinds = line_kinds(["# Notes on the plague", "", "- Algiers lost many people", "1. Why?"])
    assert kinds == ["prose", "blank", "prose", "prose"]


def test_a_question_that_quotes_code_is_prose_and_the_code_around_it_material():
    lines = ["app = Starlette(routes=routes, middleware=[",
             "    Middleware(GZipMiddleware, compresslevel=6),",
             "])", "Below what size does `GZipMiddleware` skip compression?"]
    assert line_kinds(lines) == ["material", "material", "material", "prose"]


def test_a_comment_inside_code_belongs_to_the_paste():
    assert line_kinds(["def f():", "    # why is this slow?", "    return 1"]) == ["material"] * 3
