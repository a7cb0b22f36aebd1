"""A hit's own passage, when short, is shown whole beside its longer neighbour
(kernel/query/excerpts.py: ``HitWindows``, ``cut(keep=…)``; docs/performance.md, "Where
the shown text loses the answer")."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from passageway.builtin.ranking import FusionRanker
from passageway.kernel.query.excerpts import HitWindows, anchors, cut, joined, with_neighbour
from passageway.kernel.query.rendering import excerpt
from passageway.kernel.store import Candidate
from passageway.kernel.text.windows import SHORT_PASSAGE, flat
from passageway.testing.recall import recall_over as recall
from passageway.testing.toy_embedder import ToyEmbedder
from tests.test_excerpts import OneStore, window_cache

SENTENCES = [f"Sentence number {number:03d} is here and it is fifty long." for number in range(40)]
# starship's German FAQ: the section is one sentence, its neighbour a long one about fonts.
OWN = "Wenn du Symbole siehst, die du nicht kennst, kannst du `starship explain` verwenden."
NEIGHBOUR = " ".join(SENTENCES)
QUESTION = "Wie finde ich heraus, was ein Symbol in meinem Prompt bedeutet?"


def candidate(key: int, text: str, similarity: float) -> Candidate:
    return Candidate("starship-de", key, "faq/README.md", "FAQ", "u", None, text, similarity, 0)


def test_with_neighbour_gives_the_item_order_and_the_hits_own_text():
    hit, other = candidate(8, OWN, 0.9), candidate(7, NEIGHBOUR, 0.8)
    assert with_neighbour(hit, [hit, other]) == [NEIGHBOUR, OWN]  # the item's order, the hit second
    assert with_neighbour(hit, [hit]) == [OWN]


def test_hit_windows_are_a_frozen_record_that_reads_as_its_windows():
    windows = HitWindows(((0, 0.5), (40, 0.7)), own=(0, 30))
    assert len(windows) == 2 and windows[1] == (40, 0.7) and list(windows) == [(0, 0.5), (40, 0.7)]
    assert tuple(windows) == windows.windows  # the windows alone, without own
    assert sorted(windows, key=lambda window: -window[1])[0] == (40, 0.7)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        windows.own = None  # type: ignore[misc]


def test_a_span_to_keep_moves_the_excerpt_to_it_when_it_would_be_left_out():
    text = " ".join(SENTENCES)
    anchor = text.index(SENTENCES[30])
    assert SENTENCES[2] not in cut(text, anchor, 300)
    before = (text.index(SENTENCES[2]), text.index(SENTENCES[3]) - 1)
    assert cut(text, anchor, 300, keep=before).startswith("… " + SENTENCES[2])
    after = (text.index(SENTENCES[30]), text.index(SENTENCES[31]) - 1)
    shown = cut(text, text.index(SENTENCES[5]), 300, keep=after)
    assert shown.startswith("… " + SENTENCES[26]) and SENTENCES[30] in shown  # the earliest start that
    assert len(shown) <= 304  # shows it whole
    inside = (text.index(SENTENCES[31]), text.index(SENTENCES[32]) - 1)
    assert cut(text, anchor, 300, keep=inside) == cut(text, anchor, 300)  # already shown
    too_long = (text.index(SENTENCES[2]), text.index(SENTENCES[10]))
    assert cut(text, anchor, 300, keep=too_long) == cut(text, anchor, 300)  # does not fit


async def test_the_short_own_passage_of_a_hit_is_shown_beside_a_neighbour_that_matched_better():
    embedder = ToyEmbedder(min_similarity=0.5)
    question_vector = np.asarray(await embedder.embed([QUESTION], "query"), dtype=np.float32)[0]
    cache = await window_cache(NEIGHBOUR, SENTENCES[36], question_vector)
    own, other = candidate(7, OWN, 0.9), candidate(8, NEIGHBOUR, 0.8)
    parts = with_neighbour(own, [own, other])

    found = await anchors([(parts, own.text)], question_vector, cache)
    windows = found[flat(joined(parts))]
    assert isinstance(windows, HitWindows) and windows.own == (0, len(flat(OWN)))
    assert len(OWN) <= SHORT_PASSAGE
    shown = excerpt(joined(parts), QUESTION, 600, windows)
    assert shown.startswith(OWN) and len(shown) <= 602
    before = excerpt(joined(parts), QUESTION, 600, tuple(windows))  # the own passage not known
    assert "starship explain" not in before and SENTENCES[36] in before

    answer = await recall(QUESTION, [OneStore([own, other])], embedder, FusionRanker("vector"),
                          vector_cache=cache)
    assert "`starship explain`" in answer.hits[0].text
