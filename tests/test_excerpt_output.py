"""A terminal session's output is left out of what an excerpt shows; its commands stay
(kernel/query/excerpts.py, ``FOLD_OUTPUT``; docs/performance.md, "Which passage an excerpt shows")."""

from __future__ import annotations

import pytest

from passageway.kernel.query import excerpts
from passageway.kernel.query.excerpts import tidy
from passageway.kernel.query.rendering import excerpt
from passageway.kernel.text.windows import flat

HELP = "\n".join(f"  --option-{number} INTEGER  What option {number} does.  [default: {number}]"
                 for number in range(30))

PAGE = f"""An argument with a default value shows that value in the help text. Check it:

```console
$ python main.py --help
// Notice the new option
Usage: main.py [OPTIONS] NAME
Options:
{HELP}
```

Pass `show_default=False` to stop that."""


def test_the_output_of_a_console_block_is_left_out_and_its_commands_and_comments_stay() -> None:
    shown, moved = tidy(PAGE)
    assert shown == ("An argument with a default value shows that value in the help text. Check it:\n"
                     "```console\n$ python main.py --help\n// Notice the new option\n```\n"
                     "Pass `show_default=False` to stop that.")
    # A place in the left-out output maps to where the text goes on.
    assert shown[moved(flat(PAGE).index("--option-3")):].startswith("```\nPass")


@pytest.mark.parametrize("language", ["bash", "python", "toml", ""])
def test_other_code_blocks_keep_every_line(language: str) -> None:
    page = PAGE.replace("```console", f"```{language}")
    assert "--option-29" in tidy(page)[0]


def test_an_excerpt_anchored_before_a_long_help_output_reaches_the_answer_after_it() -> None:
    shown = excerpt(PAGE, "how do I hide the default value of an argument", 300)
    assert "show_default=False" in shown
    assert "--option-" not in shown


def test_without_the_rule_the_output_fills_the_excerpt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(excerpts, "FOLD_OUTPUT", False)
    assert "--option-29" in tidy(PAGE)[0]
    assert "show_default=False" not in excerpt(PAGE, "how do I hide the default value of an argument", 300)
