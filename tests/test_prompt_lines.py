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


RUSTC = ["error[E0382]: borrow of moved value: `v`",
         " --> src/main.rs:4:20",
         "  |",
         "2 |     let v = vec![1, 2, 3];",
         "  |         - move occurs because `v` has type `Vec<i32>`, which does not implement the"
         " `Copy` trait",
         "3 |     let w = v;",
         "  |             - value moved here",
         "4 |     println!(\"{:?}\", v);",
         "  |                    ^ value borrowed here after move",
         "warning: unused variable: `w`",
         "   = note: `#[warn(unused_variables)]` on by default",
         "help: consider cloning the value",
         "error: could not compile `demo` (bin \"demo\") due to 1 previous error"]
GCC = ["main.c: In function 'main':",
       "main.c:5:3: error: implicit declaration of function 'prinf'; did you mean 'printf'? [-Werror]",
       "    5 |   prinf(\"hello\\n\");",
       "      |   ^~~~~",
       "cc1: all warnings being treated as errors"]
CHECKERS = ["app/main.py:10: error: Incompatible return value type (got \"str\", expected \"int\")",
            "app/main.py:14: note: Revealed type is \"builtins.str\"",
            "Found 1 error in 1 file (checked 3 source files)",
            "src/app.ts(12,7): error TS2322: Type 'string' is not assignable to type 'number'.",
            "src/app.ts:12:7 - error TS2322: Type 'string' is not assignable to type 'number'.",
            "src/index.js",
            "  3:7  error  'x' is assigned a value but never used  no-unused-vars",
            "✖ 1 problem (1 error, 0 warnings)"]
RESOLVER = ["  × No solution found when resolving dependencies:",
            "  ╰─▶ Because you require numpy>=3 and only numpy<=2.1.3 is available, we can conclude"
            " that your requirements are unsatisfiable.",
            "  help: loosen the bound on numpy"]


def test_a_compilers_report_is_material_although_its_messages_are_words():
    # rustc's "value moved here" and mypy's "Revealed type is …" were read as the user's prose,
    # and the reduced question began with them
    for report in (RUSTC, GCC, CHECKERS, RESOLVER):
        lines = [*report, "Why does the build fail?"]
        assert line_kinds(lines) == ["material"] * len(report) + ["prose"], report


def test_a_lowercase_label_alone_is_prose_and_a_report_label_beside_material_is_not():
    assert line_kinds(["warning: this setup is a draft", "note: the proxy sets it"]) == ["prose"] * 2
    assert line_kinds([" --> src/main.rs:1:5", "warning: unused import: `std::fs`"]) == ["material"] * 2
    # a host and port that opens a question is still the user's question
    assert line_kinds(["example.com:8080 refuses connections. Why?"]) == ["prose"]
