"""bench/window_choice.py pairs each question with its own page: the sample corpus's English and
German folders hold the same file names, and one must not stand in for the other."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from passageway.builtin.eval.cases import Case

_spec = importlib.util.spec_from_file_location(
    "window_choice", Path(__file__).resolve().parents[1] / "bench" / "window_choice.py"
)
assert _spec is not None and _spec.loader is not None
window_choice = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(window_choice)

FILLER = " It goes on about other things for a while, so that the passage needs windows."


def two_languages(root: Path) -> dict[str, list]:
    for folder, words in (("en", "The river is called the Amazon."), ("de", "Der Fluss heißt Amazonas.")):
        (root / folder).mkdir()
        (root / folder / "river.md").write_text(f"# River\n\n{words}{FILLER * 6}\n", encoding="utf-8")
    return window_choice.pages(root, ["en", "de"])


def test_pages_of_the_same_name_in_two_folders_are_both_kept(tmp_path):
    texts = two_languages(tmp_path)

    assert sorted(texts) == ["de/river.md", "en/river.md"]
    assert "Amazon." in texts["en/river.md"][0].text
    assert "Amazonas" in texts["de/river.md"][0].text


def test_a_question_is_paired_with_its_own_language_or_the_other():
    texts = {"en/river.md": ["en passage"], "de/river.md": ["de passage"]}
    english = Case(query="What is the river called?", expect=("river.md",), group="en")
    german = Case(query="Wie heißt der Fluss?", expect=("river.md",), group="de")

    assert window_choice.expected_pages(english, texts, "own") == ["en/river.md"]
    assert window_choice.expected_pages(german, texts, "own") == ["de/river.md"]
    assert window_choice.expected_pages(english, texts, "other") == ["de/river.md"]
    assert window_choice.expected_pages(german, texts, "other") == ["en/river.md"]


def test_a_page_in_one_language_only_stays_the_questions_own():
    texts = {"starship/en/config.md": [], "starship/en/guide.md": [], "starship/de/guide.md": []}
    only_english = Case(query="Wo ist die Konfiguration?", expect=("starship/en/config.md",),
                        group="starship-de-en-only")
    both = Case(query="Wie richte ich es ein?", expect=("starship/de/guide.md", "starship/en/guide.md"),
                group="starship-de")

    assert window_choice.expected_pages(only_english, texts, "own") == ["starship/en/config.md"]
    assert window_choice.expected_pages(both, texts, "own") == ["starship/de/guide.md"]
    assert window_choice.expected_pages(both, texts, "other") == ["starship/en/guide.md"]


def test_answer_pairs_hold_the_own_passage_once_per_question(tmp_path):
    texts = two_languages(tmp_path)
    case = Case(query="What is the river called?", expect=("river.md",),
                expect_text=("the Amazon", "Amazonas"), group="en")

    pairs = window_choice.answer_pairs([case, case], texts)  # two question files, one question

    assert [(found, passage.text) for found, passage in pairs] == [(case, texts["en/river.md"][0].text)]
    other = window_choice.answer_pairs([case], texts, "other")
    assert [passage.text for _, passage in other] == [texts["de/river.md"][0].text]
