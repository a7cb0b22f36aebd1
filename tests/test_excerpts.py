"""Excerpts chosen by meaning: windows at index time, the window most like the question at
recall, the word rule where window vectors are missing (kernel/query/excerpts.py)."""

from __future__ import annotations

import attrs
import numpy as np

from passageway.builtin.ranking import FusionRanker
from passageway.kernel.index.window_vectors import embed_windows
from passageway.kernel.query.excerpts import cut
from passageway.kernel.store import Candidate
from passageway.kernel.text.chunking import digest_of
from passageway.kernel.text.windows import (
    SHORT_PASSAGE,
    flat,
    sentence_starts,
    window_plan,
    window_spans,
    window_texts,
    windows,
)
from passageway.testing.recall import recall_over as recall
from passageway.testing.toy_embedder import ToyEmbedder

FILLER = [
    f"Paragraph part {number} describes the river banks and the old harbour walls in detail."
    for number in range(24)
]
ANSWER = "The engineer received his first patent for alternating current in the spring of 1888."
ENGLISH = " ".join([*FILLER[:20], ANSWER, *FILLER[20:]])
GERMAN_QUESTION = "Wann erhielt der Erfinder das erste Schutzrecht für Wechselstrom?"


class DictCache:
    """The vector cache's lookup, in memory; records what was asked and put."""

    def __init__(self, vectors: dict[str, np.ndarray] | None = None) -> None:
        self.vectors = dict(vectors or {})
        self.asked: list[list[str]] = []

    async def get_many(self, digests):
        self.asked.append(list(digests))
        return {digest: self.vectors[digest] for digest in digests if digest in self.vectors}

    async def put_many(self, vectors):
        self.vectors.update(vectors)


class OneStore:
    source = "corpus-en"

    def __init__(self, candidates):
        self.candidates = candidates

    def search(self, question, vector, limit):
        return [], list(self.candidates)

    async def items(self, item_ids):
        return []


def unit(seed: int, dim: int = 64) -> np.ndarray:
    vector = np.random.default_rng(seed).normal(size=dim).astype(np.float32)
    return vector / np.linalg.norm(vector)


async def window_cache(text: str, best: str, question_vector: np.ndarray) -> DictCache:
    """Window vectors: the window ``best`` starts with points at the question, the others away."""
    cache = DictCache()
    for number, window in enumerate(window_texts(text)):
        vector = question_vector if window.startswith(best) else unit(number + 100)
        cache.vectors[digest_of(window)] = vector
    return cache


def test_windows_are_runs_of_two_sentences_over_the_flat_text():
    text = flat("One here.  Two there.\nThree now.  four stays in three. Five!")
    starts = sentence_starts(text)
    second = "Two there. Three now. four stays in three. Five!"
    assert [text[start:] for start in starts][:2] == [text, second]
    assert [text[a:b].strip() for a, b in windows(text)] == [
        "One here. Two there.",
        "Three now. four stays in three. Five!",
    ]
    four = "One. Two. Three. Four. Five."
    assert [four[a:b].strip() for a, b in windows(four)] == ["One. Two.", "Three. Four.", "Four. Five."]
    assert windows("Only one sentence") == [(0, len("Only one sentence"))]


def test_a_short_passage_has_no_windows_a_long_one_has_one_per_two_sentences():
    assert window_texts("A short passage. It is shown whole.") == []
    assert len(ENGLISH) > SHORT_PASSAGE
    assert len(window_texts(ENGLISH)) == -(-len(sentence_starts(flat(ENGLISH))) // 2)


async def test_a_german_question_gets_the_english_sentence_that_answers_it():
    embedder = ToyEmbedder(min_similarity=0.0)
    question_vector = np.asarray(await embedder.embed([GERMAN_QUESTION], "query"), dtype=np.float32)[0]
    candidate = Candidate("corpus-en", 1, "tesla", "Tesla", "u", None, ENGLISH, 0.9, 0)
    cache = await window_cache(ENGLISH, ANSWER, question_vector)

    by_meaning = await recall(GERMAN_QUESTION, [OneStore([candidate])], embedder, FusionRanker("vector"),
                              vector_cache=cache)
    without = await recall(GERMAN_QUESTION, [OneStore([candidate])], embedder, FusionRanker("vector"))

    assert len(ENGLISH) > 1600  # longer than any share: the excerpt must choose
    assert ANSWER in by_meaning.hits[0].text
    # the German question shares no word with the text: the word rule starts at the beginning
    assert ANSWER not in without.hits[0].text and without.hits[0].text.startswith(FILLER[0])


async def test_missing_window_vectors_fall_back_to_the_word_rule():
    embedder = ToyEmbedder(min_similarity=0.0)
    question = "When was the first patent for alternating current received by the engineer?"
    question_vector = np.asarray(await embedder.embed([question], "query"), dtype=np.float32)[0]
    cache = await window_cache(ENGLISH, FILLER[2], question_vector)  # meaning would pick part 2
    for window in window_texts(ENGLISH)[::2]:  # half the windows were never made (an older index)
        cache.vectors.pop(digest_of(window))
    candidate = Candidate("corpus-en", 1, "tesla", "Tesla", "u", None, ENGLISH, 0.9, 0)

    answer = await recall(question, [OneStore([candidate])], embedder, FusionRanker("vector"),
                          vector_cache=cache)

    assert ANSWER in answer.hits[0].text  # the words rule found it; part 2's window was not used
    assert cache.asked, "the windows' vectors were looked up"


async def test_an_excerpt_that_reaches_the_end_starts_earlier_to_fill_its_share():
    embedder = ToyEmbedder(min_similarity=0.0)
    question_vector = np.asarray(await embedder.embed(["last part"], "query"), dtype=np.float32)[0]
    cache = await window_cache(ENGLISH, FILLER[22], question_vector)
    candidate = Candidate("corpus-en", 1, "tesla", "Tesla", "u", None, ENGLISH, 0.9, 0)

    answer = await recall("last part", [OneStore([candidate])], embedder, FusionRanker("vector"),
                          vector_cache=cache)

    text = answer.hits[0].text
    assert text.startswith("… ") and text.endswith(FILLER[23])
    assert FILLER[20] in text  # started before the best window, since the rest was too short


async def test_embed_windows_embeds_only_what_the_cache_lacks_shortest_first():
    cache = DictCache()
    embedded: list[list[str]] = []

    async def embed(pairs):
        embedded.append([text for _, text in pairs])
        await cache.put_many({digest: unit(len(text)) for digest, text in pairs})

    first = await embed_windows([ENGLISH, "Too short to cut."], cache, embed)
    again = await embed_windows([ENGLISH], cache, embed)

    assert first == len(window_texts(ENGLISH)) and again == 0
    assert len(embedded) == 1
    assert [len(text) for text in embedded[0]] == sorted(len(text) for text in embedded[0])


async def test_every_hit_shows_its_items_next_passage_in_the_items_order():
    first = Candidate("corpus-en", 7, "tesla", "Tesla", "u", None, "Tesla was born in Smiljan.", 0.9, 0)
    second = Candidate("corpus-en", 8, "tesla", "Tesla", "u", None, "He funded his work by patents.", 0.8, 1)
    other = Candidate("corpus-en", 9, "edison", "Edison", "v", None, "Edison funded his own lab.", 0.85, 2)
    store = OneStore([second, first, other])
    lone = await recall("Tesla born", [store], ToyEmbedder(min_similarity=0.89), FusionRanker("vector"))
    assert [hit.item_id for hit in lone.hits] == ["tesla"]
    assert lone.hits[0].text == f"{first.text} {second.text}"  # both, in the item's order
    leader = await recall("Tesla born", [store], ToyEmbedder(min_similarity=0.5), FusionRanker("vector"))
    assert [hit.item_id for hit in leader.hits] == ["tesla", "edison"]
    assert leader.hits[0].text == f"{first.text} {second.text}"  # 0.05 ahead: a clear leader
    close = OneStore([second, first, attrs.evolve(other, similarity=0.89)])
    several = await recall("Tesla born", [close], ToyEmbedder(min_similarity=0.5), FusionRanker("vector"))
    assert [hit.item_id for hit in several.hits] == ["tesla", "edison"]
    assert several.hits[0].text == f"{first.text} {second.text}"  # every hit, not only a leader


def test_an_initial_or_an_ordinal_does_not_end_a_sentence():
    text = "Die T. T. Tsui Galerie wurde am 12. Mai eröffnet. Sie zeigt Kunst aus den U.S. Sammlungen. Ende."
    assert [text[start:] for start in sentence_starts(text)] == [
        text, "Sie zeigt Kunst aus den U.S. Sammlungen. Ende.", "Ende.",
    ]


async def test_a_lone_hits_windows_are_found_whatever_its_first_passage_holds():
    # The first passage has an odd number of sentences: windows cut across the seam of the two
    # passages would not be the ones the sync stored, and the excerpt would fall back to words.
    first_text = " ".join(FILLER[:13])
    more = [sentence.replace("Paragraph part", "Section") for sentence in FILLER]
    second_text = " ".join([*FILLER[13:], *more[:12], ANSWER, more[12]])
    assert len(sentence_starts(first_text)) % 2 == 1
    embedder = ToyEmbedder(min_similarity=0.89)
    question_vector = np.asarray(await embedder.embed([GERMAN_QUESTION], "query"), dtype=np.float32)[0]
    cache = await window_cache(second_text, ANSWER, question_vector)
    for window in window_texts(first_text):
        cache.vectors[digest_of(window)] = unit(len(window))
    first = Candidate("corpus-en", 7, "tesla", "Tesla", "u", None, first_text, 0.9, 0)
    second = Candidate("corpus-en", 8, "tesla", "Tesla", "u", None, second_text, 0.8, 1)

    answer = await recall(GERMAN_QUESTION, [OneStore([first, second])], embedder, FusionRanker("vector"),
                          vector_cache=cache)

    assert len(answer.hits) == 1 and len(first_text) + len(second_text) > 1.5 * len(answer.hits[0].text)
    assert ANSWER in answer.hits[0].text
    assert not answer.hits[0].text.startswith(FILLER[0])  # not the word rule's start


def test_an_excerpt_starts_up_to_a_third_of_its_share_before_its_sentence():
    sentences = [f"Sentence number {number:03d} is here and it is fifty long." for number in range(20)]
    text = " ".join(sentences)
    assert {len(sentence) + 1 for sentence in sentences[:-1]} == {50}
    anchor = text.index(sentences[10])

    excerpt = cut(text, anchor, 300)  # a third of 300 reaches two sentences back, not three

    assert excerpt.startswith("… " + sentences[8]) and sentences[10] in excerpt


DOC_INTRO = " ".join(f"Step {n} of the setup explains a detail of the configuration." for n in range(6))
DOC_CODE = "\n".join(f"app.add_route('/page{n}', handler_{n})" for n in range(30))
DOC_PAGE = f"""{DOC_INTRO}

```python
{DOC_CODE}
app.mount('/static', StaticFiles(directory='assets'), name='static')
```

| option | meaning |
| --- | --- |
""" + "\n".join(f"| flag{n} | sets the level {n} of the output |" for n in range(20)) + """
| `--reload` | restarts the server when a source file changes |"""


def test_cuts_fall_between_lines_of_code_and_rows_of_tables():
    from passageway.kernel.query.excerpts import unit_starts

    text = flat(DOC_PAGE)
    starts = unit_starts(DOC_PAGE)
    assert text[starts[starts.index(0) + 1]:].startswith("Step 1")  # prose: its sentences
    assert any(text[start:].startswith("app.add_route('/page7'") for start in starts)
    assert any(text[start:].startswith("| flag3 |") for start in starts)
    assert starts == unit_starts(DOC_PAGE)  # deterministic
    prose = " ".join(FILLER)
    assert unit_starts(prose) == sentence_starts(prose)  # prose alone is cut as before


def _doc_windows(intro: float, rest: float) -> tuple[tuple[int, float], ...]:
    """Two windows of DOC_PAGE: the introduction and everything from the code block on."""
    return ((0, intro), (flat(DOC_PAGE).index("```python"), rest))


def test_the_line_of_a_code_block_that_holds_the_questions_rare_words_is_the_anchor():
    from passageway.kernel.query.rendering import excerpt

    question = "How do I mount a StaticFiles directory?"
    # The introduction's window is a little closer to the question; the one code line that holds
    # its rare words wins by them.
    piece = excerpt(DOC_PAGE, question, 300, _doc_windows(0.900, 0.885))
    assert "app.mount('/static', StaticFiles(directory='assets'), name='static')" in piece
    assert piece.startswith("… app.add_route(")  # whole lines before it, not half of one
    far = excerpt(DOC_PAGE, question, 300, _doc_windows(0.950, 0.885))
    assert far.startswith("Step 0")  # a window much closer still wins: the words only add a little


def test_a_table_row_that_holds_the_questions_rare_words_is_the_anchor():
    from passageway.kernel.query.rendering import excerpt

    question = "Which flag restarts the server when a source file changes?"
    piece = excerpt(DOC_PAGE, question, 250, _doc_windows(0.900, 0.885))
    assert "| `--reload` | restarts the server when a source file changes |" in piece
    assert piece.startswith("… | flag")


def test_a_word_in_every_line_locates_nothing():
    from passageway.kernel.query.excerpts import best_start

    lines = "\n".join(f"starship init shell{n} | source" for n in range(12))
    text = f"```sh\n{lines}\nstarship init fish | source\n```"
    start = best_start(text, "How do I set up starship with fish?")
    assert flat(text)[start:].startswith("starship init fish")  # "starship" is in every line


def test_without_windows_the_words_choose_and_prose_is_cut_between_sentences():
    from passageway.kernel.query.rendering import excerpt

    piece = excerpt(DOC_PAGE, "What does step 4 of the setup explain?", 200)
    assert piece.startswith("Step 0") or piece.startswith("… Step")
    window_start = flat(DOC_PAGE).index("Step 4")
    chosen = excerpt(DOC_PAGE, "the configuration", 120, ((0, 0.8), (window_start, 0.9)))
    assert chosen.startswith("… Step 3") or chosen.startswith("… Step 4")


def test_a_padded_table_delimiter_row_does_not_fill_the_excerpt():
    from passageway.kernel.query.excerpts import tidy
    from passageway.kernel.query.rendering import excerpt

    table = ("| Option" + " " * 30 + "| Default | Description" + " " * 60 + "|\n"
             "| " + "-" * 36 + " | ------- | " + "-" * 70 + " |\n"
             "| `truncation_length` | `3` | The number of parent folders to keep. |")
    shown, moved = tidy(table)
    assert "| --- | --- | --- |" in shown and "----" not in shown
    assert shown[moved(flat(table).index("| `truncation")):].startswith("| `truncation_length`")
    assert excerpt(table, "how many parent folders", 140) == shown  # whole, once compact


def test_markup_that_shows_nothing_is_left_out_of_an_excerpt_but_code_is_kept():
    from passageway.kernel.query.excerpts import tidy

    page = """<details><summary>Fish</summary>

/// tip

Read the [guide](https://example.org/a/very/long/address.html) first. ![shot](img/shot.png)

///

{* docs_src/first_steps/tutorial001.py hl[3] *}

Use `[x](y)` and `<module>.disabled` as written:

```html
<a href="/docs">docs</a> <font color="#A1EFE4">--name</font>
```

</details>"""
    shown, moved = tidy(page)
    # Code keeps its line breaks (the same length as the spaces of the flat text).
    assert shown == ("Fish tip Read the guide first. Use `[x](y)` and `<module>.disabled` as written:\n"
                     '```html\n<a href="/docs">docs</a> --name\n```')
    place = flat(page).index("Read the")
    assert shown[moved(place):].startswith("Read the")
    assert shown[moved(flat(page).index("{*")):].startswith("Use `[x](y)`")  # a removed part: what follows


def test_window_spans_cover_each_window_in_the_embedding_input():
    raw = ENGLISH.replace(". ", ".\n  ", 5).replace(" the ", "  the\t", 3)  # the source's own spacing
    full = "Title › Part: " + raw
    spans = window_spans(raw, full)
    assert [digest for digest, _, _ in spans] == [digest for _, digest in window_plan(flat(raw))]
    for (_, start, end), text in zip(spans, window_texts(raw), strict=True):
        assert flat(full[start:end]) == text
        assert not full[start].isspace() and not full[end - 1].isspace()
    assert window_spans("A short passage. It is shown whole.", "T: A short passage. It is shown whole.") == []
    assert window_spans(raw, "not the passage") == []  # an input that does not end with the text
