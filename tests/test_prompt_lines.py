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


def test_pasted_output_that_reads_like_words_stays_material():
    # pytest's failure lines, HTTP headers, a setting with a value of several words, a fish
    # function's closing `end`: each ran into the user's first sentence when taken for prose
    pytest_output = ["    def test_error_page():", "        client = TestClient(app)",
                     '>       response = client.get("/boom")', "tests/test_app.py:12: ",
                     "E   RuntimeError: boom", "E    +  where 500 = <Response [500]>.status_code"]
    curl = ["$ curl -i http://localhost:8000/report.pdf", "HTTP/1.1 200 OK",
            'Content-Disposition: attachment; filename="42.pdf"', "Content-Type: application/pdf"]
    toml = ["[hostname]", 'format = "[$hostname]($style) in "', 'style = "bold dimmed green"',
            "ssh_only = true"]
    fish = ["function starship_transient_prompt_func", "    starship module character", "end"]
    for paste in (pytest_output, curl, toml, fish):
        assert line_kinds(paste) == ["material"] * len(paste), paste


def test_words_that_only_resemble_output_stay_prose():
    lines = ["Note: the header is set by the proxy, not by my app.",
             "Every response carries the Content-Type header twice.",
             "Each request takes = roughly two seconds here"]
    assert line_kinds(lines) == ["prose"] * 3


def test_a_sentence_that_starts_with_error_is_prose_and_an_error_line_stays_material():
    # "Error messages …" was read as an exception's line, so the only question of the prompt was lost
    asked = ["Error messages are confusing when I run mkdocs serve, why?",
             "Error pages from mkdocs build look unstyled on GitHub Pages.",
             "When I run mkdocs build I get this Error:"]
    assert line_kinds(asked) == ["prose"] * 3
    pasted = ["Error: Cannot find module 'mkdocs-material'",
              "Error response from daemon: pull access denied for squidfunk/mkdocs-materiall",
              "ConfigurationError                        Traceback (most recent call last)",
              "Error [ERR_REQUIRE_ESM]: require() of ES Module not supported.",
              "Error"]
    for line in pasted:
        assert line_kinds([line]) == ["material"], line


def test_a_yaml_setting_whose_value_is_words_belongs_to_the_paste():
    # `site_name: My Docs Site` read as prose ran into the question and named nothing
    lines = ["I changed my mkdocs.yml and now the nav is gone:", "",
             "site_name: My Docs Site", "site_url: https://example.com/", "theme:", "  name: material",
             "description: A site about the cats of Oran", "copyright: Copyright &copy; 2024 Jane Doe", "",
             "Why does the About page not show up?"]
    assert line_kinds(lines) == ["prose", "blank", *["material"] * 6, "blank", "prose"]
    # a plain word before a colon is not a setting when nothing around it is material
    alone = ["note: the theme is installed, I checked with pip list.",
             "follow-up: I tried it again and it still fails."]
    assert line_kinds(alone) == ["prose"] * 2
