"""What a prompt asks (kernel/query/prompt.py): code, logs, traces, diffs and data are not the question."""

from __future__ import annotations

import subprocess
import sys
import time
import tomllib
from itertools import zip_longest
from pathlib import Path

import pytest

from passageway.kernel.query.prompt import (
    PLAIN_CHARS,
    Asked,
    asked,
    fit_to_tokens,
    is_question_sentence,
)

QUESTION = "How many people were lost in Algiers during 1620-21?"
FRAGE = "Wie viele Menschen starben 1620-21 in Algier an der Pest?"
CODE = (Path(__file__).resolve().parent.parent / "kernel" / "query" / "recall.py").read_text("utf-8")

PYTHON_TRACE = """Traceback (most recent call last):
  File "/srv/app/main.py", line 12, in <module>
    run(config)
  File "/srv/app/main.py", line 8, in run
    raise ValueError("the port is taken")
ValueError: the port is taken"""

JAVA_TRACE = """Exception in thread "main" java.lang.IllegalStateException: Queue full
\tat com.example.queue.Buffer.offer(Buffer.java:42)
\tat com.example.App.main(App.java:17)
Caused by: java.io.IOException: disk quota exceeded
\t... 2 more"""

LOG = """2026-11-30 10:00:01,233 INFO  [main] server started on port 8082
2026-11-30 10:00:02,101 WARN  [pool-1] slow response from upstream (1250 ms)
[ERROR] connection reset by peer
Nov 30 10:00:04 host sshd[811]: Accepted publickey for deploy from 10.0.0.5"""

DIFF = """diff --git a/kernel/recall.py b/kernel/recall.py
index 3f2a1b0..9c8d7e6 100644
--- a/kernel/recall.py
+++ b/kernel/recall.py
@@ -10,7 +10,7 @@ def recall(question):
- Return the best passages for the question.
+ Return at most three passages for the question.
     stores = list(stores)"""

JSON = """{
  "name": "corpus-en",
  "items": 20,
  "passages": [1, 2, 3],
  "ok": true
}"""

TABLE = """| source | items | passages |
| --- | --- | --- |
| corpus-en | 20 | 96 |
| corpus-de | 20 | 97 |"""


@pytest.mark.parametrize("paste", [CODE[:3000], PYTHON_TRACE, JAVA_TRACE, LOG, DIFF, JSON, TABLE],
                         ids=["code", "python-trace", "java-trace", "log", "diff", "json", "table"])
@pytest.mark.parametrize("where", ["before", "after"])
def test_a_question_is_found_before_or_after_pasted_material(paste, where):
    prompt = f"{QUESTION}\n\n{paste}" if where == "before" else f"{paste}\n\n{QUESTION}"
    result = asked(prompt)
    assert (result.text, result.why) == (QUESTION, "questions")


@pytest.mark.parametrize("paste", [CODE[:10_000], PYTHON_TRACE, JAVA_TRACE, LOG, DIFF, JSON, TABLE],
                         ids=["code", "python-trace", "java-trace", "log", "diff", "json", "table"])
def test_a_paste_without_a_question_asks_nothing(paste):
    result = asked(paste)
    assert (result.text, result.why) == ("", "nothing asked")
    assert result.silent


def test_a_question_in_a_code_comment_belongs_to_the_paste():
    prompt = "def deaths(city):\n    # How many people were lost in Algiers?\n    return find(city)\n"
    assert asked(prompt).silent
    fenced = f"```python\n# {QUESTION}\nx = 1\n```\n"
    assert asked(fenced).silent


def test_german_and_english_prose_around_a_paste():
    prompt = (
        "Ich habe das Log von gestern angehängt.\n\n" + LOG + "\n\n"
        f"Der Server lief die ganze Nacht. {FRAGE} And what carbon does the Amazon store?"
    )
    # Beside a paste the sentence before a question goes with it as context (it says what went
    # wrong); the lead-in of its own paragraph does not, and neither does a question's second question.
    reduced = asked(prompt)
    assert reduced.text == f"{FRAGE} And what carbon does the Amazon store?"
    assert reduced.context == "Der Server lief die ganze Nacht."


def test_a_short_prose_prompt_is_taken_whole_even_without_a_question_mark():
    for prompt in ("black death algiers", "Tell me about the Amazon rainforest", QUESTION, FRAGE):
        assert asked(prompt).text == prompt and asked(prompt).why == "plain"


def test_long_prose_is_reduced_to_its_questions_and_long_prose_without_one_asks_nothing():
    story = "The harbour was busy that year and the ships came in daily. " * 30
    assert len(story) > PLAIN_CHARS
    assert asked(story).silent
    assert asked(story + QUESTION).text == QUESTION


def test_a_question_without_content_words_takes_the_sentence_before_it():
    prompt = f"{PYTHON_TRACE}\n\nThe import of the Algiers plague records fails here. Why is that?"
    assert asked(prompt).text == "The import of the Algiers plague records fails here. Why is that?"


def test_statements_that_open_with_a_question_word_are_not_questions():
    assert not is_question_sentence("When I run the importer, it fails.")
    assert not is_question_sentence("How it works is described below:")
    assert is_question_sentence("How many people were lost in Algiers")
    assert is_question_sentence("Explain the Black Death in Algiers.")
    assert is_question_sentence("Erkläre die Pest in Algier.")
    assert is_question_sentence("- what does the Amazon store?")


def test_inline_code_in_a_question_keeps_it_prose():
    prompt = f"{CODE[:2000]}\n\nWhy does `gather_candidates()` skip a store that raises?"
    assert asked(prompt).text == "Why does `gather_candidates()` skip a store that raises?"


def test_reducing_is_idempotent():
    for prompt in (f"{LOG}\n{QUESTION} {FRAGE}", QUESTION, f"{PYTHON_TRACE}\n\nExplain the error."):
        once = asked(prompt).text
        assert asked(once).text == once


def test_twenty_thousand_characters_are_read_in_milliseconds():
    prompt = (CODE * 2)[:19_900] + "\n\n" + QUESTION  # a paragraph of its own, wherever the cut lands
    started = time.thread_time()  # processor time: a busy machine stretches wall-clock time
    result = asked(prompt)
    elapsed = time.thread_time() - started
    assert result.text == QUESTION
    assert elapsed < 0.25  # about 5 ms here; the bound only catches a rule gone quadratic


def test_fit_to_tokens_keeps_whole_sentences_then_cuts_the_first_at_a_word():
    def count(text: str) -> int:
        return len(text.split()) + 2

    text = "One two three four? Five six seven? Eight nine ten eleven twelve?"
    assert fit_to_tokens(text, count, 100) == text
    assert fit_to_tokens(text, count, 10) == "One two three four? Five six seven?"
    assert fit_to_tokens("a b c d e f g h i j", count, 6) == "a b c d"


CORPUS = Path(__file__).resolve().parent.parent / "corpus"
sys.path.insert(0, str(CORPUS))
import long_prompts  # noqa: E402  (the script that writes the set)
from long_prompts import LEAD_INS  # noqa: E402


def test_the_published_long_prompt_set_is_what_its_script_writes(tmp_path):
    out = tmp_path / "long.toml"
    subprocess.run([sys.executable, str(CORPUS / "long_prompts.py"), "--out", str(out)], check=True,
                   capture_output=True)
    written, published = out.read_text("utf-8"), (CORPUS / "long-prompts.toml").read_text("utf-8")
    if written != published:  # name the first case that moved, not a diff of 650 KB
        pairs = zip_longest(written.split("[[case]]"), published.split("[[case]]"), fillvalue="")
        number, (new, old) = next((n, pair) for n, pair in enumerate(pairs) if pair[0] != pair[1])
        at = next((i for i, (a, b) in enumerate(zip(new, old, strict=False)) if a != b), len(new))
        pytest.fail(f"case {number} differs at character {at}: {new[at - 60:at + 60]!r} "
                    f"against the published {old[at - 60:at + 60]!r}")


def test_the_pasted_diff_is_of_the_pinned_commit():
    """Every file the kept diff changes is there at the commit whose files the set pastes."""
    diff = (CORPUS / "long-prompts.diff").read_text("utf-8")
    changed = [line.rsplit(" b/", 1)[1] for line in diff.splitlines() if line.startswith("diff --git ")]
    assert len(changed) > 5
    for path in changed:
        probe = subprocess.run(["git", "cat-file", "-e", f"{long_prompts.PINNED}:{path}"], cwd=CORPUS.parent,
                               capture_output=True)
        assert probe.returncode == 0, f"{path} is not in {long_prompts.PINNED}"


def test_every_long_prompt_reduces_to_its_bare_question_and_every_paste_to_nothing():
    bare = [case["query"] for name in ("questions.toml", "near-topic.toml")
            for case in tomllib.loads((CORPUS / name).read_text("utf-8"))["case"]]
    for case in tomllib.loads((CORPUS / "long-prompts.toml").read_text("utf-8"))["case"]:
        result = asked(case["query"])
        if case["group"] == "paste-only":
            assert result.silent, result.text
        else:
            (question,) = [text for text in bare if text in case["query"]]
            # A lead-in written in the question's own paragraph goes with it (beside a paste the
            # sentence before a question is kept); the question itself comes out as asked bare.
            lead_in = result.text.removesuffix(question).strip()
            assert result.text.endswith(question) and lead_in in ("", *LEAD_INS["en"], *LEAD_INS["de"])
    for question in bare:  # a bare question is never changed
        assert asked(question).text == question


def test_every_bare_question_of_the_documentation_set_is_taken_as_it_stands():
    """The paste rules never touch a question asked bare: 273 of corpus/docs, inline code included."""
    for name in ("questions.toml", "near-topic.toml"):
        for case in tomllib.loads((CORPUS / "docs" / name).read_text("utf-8"))["case"]:
            assert asked(case["query"]) == Asked(case["query"], "plain"), case["query"]


@pytest.mark.parametrize("question", [
    "uv run starship init fails, why?",
    "How to set allow_origins=['*'] in CORSMiddleware(app, allow_origins=['*'])?",
    'Why does app.mount("/static", StaticFiles(directory="static")) give 404?',
])
def test_a_one_line_question_that_quotes_code_is_still_a_question(question):
    assert asked(question).text == question


TRACE_IN_APP = """Traceback (most recent call last):
  File "/app/.venv/lib/python3.12/site-packages/starlette/routing.py", line 12, in <module>
    from starlette.staticfiles import StaticFiles
  File "/app/main.py", line 3, in <module>
    run(["--reload", "--port", "8000"])
starlette.exceptions.HTTPException: 404
RuntimeError: Directory 'static' does not exist"""


def test_the_names_in_a_paste_go_with_its_question_as_terms():
    result = asked(f"{TRACE_IN_APP}\n\nWhat's going on with the StaticFiles mount?")
    assert result.text == "What's going on with the StaticFiles mount?"
    assert result.terms == ("HTTPException", "--reload", "--port", "starlette", "starlette.staticfiles",
                            "starlette.exceptions.HTTPException")
    config = asked("[server]\nallow_origins = ['*']\nDATABASE_URL=postgres://db\n\nWhy are cookies not sent?")
    assert config.terms == ("server", "allow_origins", "DATABASE_URL")


def test_a_paste_that_asks_nothing_has_no_terms_and_a_bare_question_none():
    assert asked(TRACE_IN_APP) == Asked("", "nothing asked")
    assert asked(QUESTION).terms == ()


WORST_SHAPES = {
    "a letter and underscores": "a" + "_" * 200_000,
    "a letter and dots": "a" + "." * 200_000,
    "a letter and dashes": "a" + "-" * 200_000,
    "a dotted path": "a." * 100_000,
    "a snake_case name": "a_" * 100_000,
    "a settings key": "DATABASE_" + "a_" * 100_000 + " = 1",
    "short sentences": "A. " * 66_000,
    "sentences after a word": "See a. " * 28_000,
}


@pytest.mark.parametrize("shape", WORST_SHAPES)
def test_the_worst_shapes_of_a_paste_are_read_in_linear_time(shape):
    # 38.3: the settings-key pattern of the paste's names was quadratic on a long run of word
    # characters with `_`, `.` or `-` (a letter and 19,900 underscores: 12-40 s with the server
    # held), and cutting many short sentences split the whole text before each full stop. At
    # 200,000 characters quadratic work takes minutes to hours; linear, a fraction of a second.
    started = time.perf_counter()
    reduced = asked("How do rivers flow into the sea?\n" + WORST_SHAPES[shape])
    assert time.perf_counter() - started < 20.0  # generous: about 0.2 s on a busy 2-core machine
    assert reduced.text.startswith("How do rivers flow")
    assert all(len(term) <= 100 for term in reduced.terms)


def test_an_overlong_run_is_no_name_but_the_names_beside_it_still_are():
    paste = f"DATABASE_URL = {'x' * 300}\nimport requests.adapters\n"
    reduced = asked(f"{QUESTION}\n{paste}")
    assert "DATABASE_URL" in reduced.terms and "requests.adapters" in reduced.terms
    assert not [term for term in reduced.terms if "xxx" in term]


def test_fit_to_tokens_counts_a_few_short_prefixes_not_one_per_sentence():
    # 38.3: a prompt of thousands of short questions was counted once per sentence kept, each
    # count over everything kept so far, on the event loop.
    counted: list[int] = []

    def count(text: str) -> int:
        counted.append(len(text))
        return len(text.split()) + 2

    text = "Why? " * 4_000
    assert fit_to_tokens(text, count, 512) == " ".join(["Why?"] * 510)
    assert len(counted) < 40 and sum(counted) < 2 * len(text) + 20 * 2_100
    three = "One two three four? Five six seven? Eight nine ten eleven twelve?"
    expected = {6: "One two three four?", 9: "One two three four? Five six seven?", 3: "One"}
    for limit, kept in expected.items():  # the cut one sentence at a time made
        assert fit_to_tokens(three, count, limit) == kept


def test_a_compilers_report_leaves_the_question_alone_and_gives_its_file_names():
    from tests.test_prompt_lines import RUSTC

    found = asked("\n".join([*RUSTC, "Why does the compiler say my vector was moved?"]))
    assert found.text == "Why does the compiler say my vector was moved?"
    assert found.context == ""
    assert "main.rs" in found.terms and "help" not in found.terms
