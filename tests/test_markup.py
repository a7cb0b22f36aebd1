"""Markup an excerpt leaves out of what it shows (kernel/query/markup.py), on text taken from the
documentation in corpus/docs: block-quote signs, reference links, include lines and attribute
lists. The index keeps the passage as written; only what is shown changes."""

from __future__ import annotations

from passageway.kernel.query.excerpts import tidy
from passageway.kernel.query.markup import quote_marks
from passageway.kernel.query.rendering import excerpt
from passageway.kernel.text.windows import flat

# mkdocs, docs/user-guide/configuration.md (a note written as a block quote)
NOTE = """> NOTE:
> On a few known hosts (specifically GitHub, Bitbucket and GitLab), the
> `edit_uri` is derived from the 'repo_url' and does not need to be set
> manually.
>
> > A quote in the quote."""


def test_the_signs_of_a_block_quote_are_left_out() -> None:
    shown, moved = tidy(NOTE)
    assert shown == ("NOTE: On a few known hosts (specifically GitHub, Bitbucket and GitLab), the "
                     "`edit_uri` is derived from the 'repo_url' and does not need to be set manually. "
                     "A quote in the quote.")
    assert shown[moved(flat(NOTE).index("`edit_uri`")):].startswith("`edit_uri` is derived")


def test_a_greater_than_sign_inside_a_line_or_in_code_stays() -> None:
    assert tidy("When `a > b` the module shows, and 3 > 2 always.")[0] == \
        "When `a > b` the module shows, and 3 > 2 always."
    assert quote_marks("code", "```powershell\n> starship init powershell\n```") == []
    assert "> starship init" in tidy("```powershell\n> starship init powershell\n```")[0]


def test_a_reference_link_shows_its_text() -> None:
    # starlette, docs/index.md; the definitions are at the end of the page, not in the passage
    text = ("Starlette is a lightweight [ASGI][asgi] framework/toolkit. Optional: "
            "* [`httpx`][httpx] - Required if you want to use the `TestClient`. "
            "A collapsed one: [Installation Guide][].")
    assert tidy(text)[0] == ("Starlette is a lightweight ASGI framework/toolkit. Optional: "
                             "* `httpx` - Required if you want to use the `TestClient`. "
                             "A collapsed one: Installation Guide.")
    assert tidy("Run `app[key][0]` to read it.")[0] == "Run `app[key][0]` to read it."


def test_include_lines_and_attribute_lists_are_left_out() -> None:
    # starship, docs/de/presets/no-nerd-font.md
    text = ("```sh\nstarship preset no-nerd-font -o ~/.config/starship.toml\n```\n\n"
            "[Klicken, um TOML herunterzuladen](/presets/toml/no-nerd-font.toml){download}\n\n"
            "<<< @/public/presets/toml/no-nerd-font.toml\n\n"
            "The table is below. {: #options .wide }")
    assert tidy(text)[0] == ("```sh\nstarship preset no-nerd-font -o ~/.config/starship.toml\n```\n"
                             "Klicken, um TOML herunterzuladen The table is below.")
    assert tidy("Use `{: #id }` to name it.")[0] == "Use `{: #id }` to name it."


def test_a_cut_excerpt_of_a_quoted_page_shows_no_quote_signs() -> None:
    page = "\n".join(f"> Sentence {number} says something about the `watch` setting." for number in range(20))
    shown = excerpt(page, "what does watch do", 200)
    assert ">" not in shown
    assert len(shown) <= 200


# mkdocs, docs/user-guide/customizing-your-theme.md, with a nested key as in choosing-your-theme.md
THEME = """Then add the folder to your `mkdocs.yml`:

```yaml
theme:
  name: mkdocs
  custom_dir: custom_theme/
  shortcuts:
      help: 191    # ?
\tnext: 78
```

All values must be key codes."""


def test_code_keeps_its_indentation_from_its_fence_and_places_still_map() -> None:
    # `theme: name: mkdocs custom_dir: …` read as one level of YAML, which says otherwise
    shown, moved = tidy(THEME)
    assert ("```yaml\ntheme:\n  name: mkdocs\n  custom_dir: custom_theme/\n  shortcuts:\n"
            "      help: 191 # ?\n    next: 78\n```\nAll values") in shown
    flat_text = flat(THEME)
    for words in ("help: 191", "next: 78", "All values", "custom_dir", "Then add"):
        assert shown[moved(flat_text.index(words)):].startswith(words), words
    # a cut excerpt keeps the indentation of the lines it shows, and starts where it should
    longer = THEME + "\n\n" + "Other settings follow here. " * 30
    cut_excerpt = excerpt(longer, "custom_dir theme folder", 150)
    assert "\n  custom_dir: custom_theme/" in cut_excerpt


def test_a_hostile_indentation_costs_a_bounded_share() -> None:
    shown, _ = tidy("```\nfirst\n" + " " * 100_000 + "second\n\tthird\n```")
    # 32 characters at most, then levels of four shown as two
    assert shown == "```\nfirst\n" + " " * 16 + "second\n  third\n```"


def test_python_levels_of_four_are_shown_as_two_and_uneven_ones_as_written() -> None:
    python = "```python\ndef f():\n    if x:\n        return 1\n```"
    assert tidy(python)[0] == "```python\ndef f():\n  if x:\n    return 1\n```"
    aligned = "```python\ncall(a,\n     b)\n```"
    assert tidy(aligned)[0] == aligned


def test_a_fence_under_a_list_item_is_shown_as_code_too() -> None:
    # mkdocs, docs/user-guide/choosing-your-theme.md: the chunker keeps the list whole, and its
    # code read `theme: name: mkdocs shortcuts: help: 191 # ? next: 78 # n` on one line
    item = ("*   **`shortcuts`**: Defines keyboard shortcut keys.\n\n    ```yaml\n    theme:\n"
            "      name: mkdocs\n      shortcuts:\n        help: 191    # ?\n    ```\n\n"
            "*   **`navigation_depth`**: The maximum depth of the navigation tree.")
    shown, moved = tidy(item)
    assert shown == ("* **`shortcuts`**: Defines keyboard shortcut keys.\n```yaml\ntheme:\n  name: mkdocs\n"
                     "  shortcuts:\n    help: 191 # ?\n```\n* **`navigation_depth`**: The maximum depth of "
                     "the navigation tree.")
    assert shown[moved(flat(item).index("* **`navigation")):].startswith("* **`navigation")
