"""Sentences and questions (kernel/query/prompt_sentences.py): which sentence is kept with a question."""

from __future__ import annotations

from passageway.kernel.query.prompt import asked
from passageway.kernel.query.prompt_sentences import questions, sentences

CODE = "def report(request):\n    rows = slow_sync_query()\n    return JSONResponse(rows)"
LOG = "2026-11-30 10:00:01,233 INFO  [main] server started on port 8082"


def test_beside_a_paste_a_question_takes_the_sentence_before_it():
    prompt = f"{CODE}\nUnder load only about 40 of these run at once. How can I let more sync endpoints run?"
    assert asked(prompt).text == (
        "Under load only about 40 of these run at once. How can I let more sync endpoints run?"
    )


def test_a_sentence_that_announces_the_paste_is_not_taken_along():
    prompt = f"{LOG}\n\nHere is what the server printed: How can I let more sync endpoints run?"
    assert asked(prompt).text == "How can I let more sync endpoints run?"


def test_without_a_paste_only_a_short_question_takes_the_sentence_before_it():
    story = "The harbour was busy that year. " * 40
    paragraphs = [sentences(f"{story} The ships came daily. How many ships reached Algiers in 1620?")]
    assert questions(paragraphs) == ["How many ships reached Algiers in 1620?"]
    assert questions(paragraphs, beside_paste=True) == [
        "The ships came daily.", "How many ships reached Algiers in 1620?"]
    short = [sentences("The import of the Algiers records fails here. Why is that?")]
    assert questions(short) == ["The import of the Algiers records fails here.", "Why is that?"]


def test_sentences_are_not_cut_after_initials_ordinals_or_abbreviations():
    assert sentences("Y. pestis came am 12. Mai bzw. später. Was geschah dann?") == [
        "Y. pestis came am 12. Mai bzw. später.", "Was geschah dann?"]
