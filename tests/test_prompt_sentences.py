"""Sentences and questions (kernel/query/prompt_sentences.py): which sentence is kept with a question."""

from __future__ import annotations

from passageway.kernel.query.prompt import asked
from passageway.kernel.query.prompt_lines import line_kinds
from passageway.kernel.query.prompt_sentences import asked_sentences, prose_sentences, questions, sentences

CODE = "def report(request):\n    rows = slow_sync_query()\n    return JSONResponse(rows)"
LOG = "2026-11-30 10:00:01,233 INFO  [main] server started on port 8082"


def test_beside_a_paste_a_question_takes_the_sentence_before_it():
    prompt = f"{CODE}\nUnder load only about 40 of these run at once. How can I let more sync endpoints run?"
    reduced = asked(prompt)
    assert reduced.text == "How can I let more sync endpoints run?"
    assert reduced.context == "Under load only about 40 of these run at once."
    assert questions(prose_sentences(prompt.split("\n"), line_kinds(prompt.split("\n"))),
                     beside_paste=True) == [reduced.context, reduced.text]


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


def test_beside_a_paste_a_line_break_before_a_capital_ends_a_sentence():
    # the program printed "File not found" without a full stop: it must not open the question
    prompt = ('def main(path: Path):\n    if not path.exists():\n        print("File not found")\n'
              "$ mycli missing.txt 2>/dev/null\nFile not found\n"
              "The error message ends up on stdout. How do I print it to standard error?")
    reduced = asked(prompt)
    assert (reduced.context, reduced.text) == (
        "The error message ends up on stdout.", "How do I print it to standard error?")
    centos = ("$ cat /etc/redhat-release\nCentOS Linux release 7.9.2009 (Core)\n"
              "How do I get starship running here?")
    assert asked(centos).text == "CentOS Linux release 7.9.2009 (Core) How do I get starship running here?"


def test_a_line_wrapped_in_small_letters_or_after_i_goes_on():
    prompt = (f"{CODE}\nunder load only about 40 of these run at once and\nthe rest wait, so\n"
              "I guess the pool is full. Why?")
    assert asked(prompt).text == (
        "under load only about 40 of these run at once and the rest wait, so I guess the pool is full. Why?")


def test_beside_a_paste_the_sentence_before_a_question_that_reads_alone_is_context():
    prompt = (f"{LOG}\nThe internal notes end up in the published site. "
              "How do I keep some Markdown files out of the built site?")
    reduced = asked(prompt)
    assert reduced.text == "How do I keep some Markdown files out of the built site?"
    assert reduced.context == "The internal notes end up in the published site."
    # a short question cannot be read alone: the sentence before stays part of it
    short = asked(f"{CODE}\nThe password is visible as I type. How do I hide it?")
    assert (short.text, short.context) == ("The password is visible as I type. How do I hide it?", "")
    # without a paste nothing is context, and a sentence announcing the paste is never taken
    assert asked("The ships came daily. How many ships reached Algiers in 1620?").context == ""
    announced = asked(f"Here is what the server printed:\n{LOG}\nHow can I let more sync endpoints run?")
    assert (announced.text, announced.context) == ("How can I let more sync endpoints run?", "")
    paragraphs = [sentences("The ships came daily. How many ships reached Algiers in 1620?")]
    assert asked_sentences(paragraphs, beside_paste=True) == (
        ["How many ships reached Algiers in 1620?"], ["The ships came daily."])
