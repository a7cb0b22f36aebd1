"""The build's two passes (kernel/index/sync_passes.py): keywords before vectors, the windows
after every passage, their restart after a kill, and the time left they report."""

from __future__ import annotations

import asyncio
import threading

import pytest

from passageway.builtin.ranking import FusionRanker
from passageway.kernel.index.sync_passes import WINDOWS_STATE
from passageway.kernel.ranking import Gate
from passageway.kernel.records import Item, Section
from passageway.kernel.text.chunking import digest_of
from passageway.kernel.text.windows import window_texts
from passageway.testing.toy_embedder import ToyEmbedder, toy_vectors
from tests.sync_helpers import FakeRunner, Setup, item
from tests.waiting import until

SENTENCES = [
    "The {w} of station {n} is measured every morning by the keeper.",
    "Its readings go into ledger {n}, kept in the tower.",
    "Visitors may ask to see ledger {n} on Sundays.",
    "The keeper also repairs the {w} when storms break it.",
    "A spare part for station {n} is kept in the cellar for that purpose.",
    "Nobody remembers who built the {w} of station {n}.",
]


def long_item(number: int) -> Item:
    """An item of two long passages (each cut into excerpt windows)."""
    word = ["barometer", "anemometer", "sundial", "lighthouse"][number % 4]
    text = " ".join(sentence.format(w=word, n=number) for sentence in SENTENCES)
    return Item(id=f"long-{number}", title=f"The {word} {number}", url=f"https://example.test/{number}",
                version="1", sections=(Section(text, "Part one"), Section(text + " It is old.", "Part two")))


class HeldEmbedder(ToyEmbedder):
    """A toy embedder that records every call and waits at ``hold`` before its ``hold_at``-th call."""

    def __init__(self) -> None:
        super().__init__()
        self.seen_calls: list[list[str]] = []
        self.hold = asyncio.Event()
        self.hold.set()
        self.hold_at = 0
        self.waiting = asyncio.Event()

    async def embed(self, texts, kind):  # type: ignore[no-untyped-def]
        if kind == "passage":
            self.seen_calls.append(list(texts))
            if len(self.seen_calls) == self.hold_at:
                self.waiting.set()
                await self.hold.wait()
        return await super().embed(texts, kind)


async def test_passages_answer_by_keywords_before_their_vectors_exist(tmp_path):
    embedder = HeldEmbedder()
    embedder.hold.clear()
    embedder.hold_at = 1  # the first embedder call waits
    runner = FakeRunner("notes", [item(n) for n in range(60)])
    async with Setup(tmp_path, runner, embedder=embedder) as sync:
        task = asyncio.create_task(sync.sync_once())
        await asyncio.wait_for(embedder.waiting.wait(), 10)

        async def all_stored() -> bool:  # the fetch goes on while the embedder works
            return await sync.store.counts() == (60, 120)

        await until(all_stored, "every fetched item is stored while the first embedder call waits")
        question = "glacier river harbour note"
        vector = toy_vectors([question])[0]
        keyword, by_vector = await asyncio.to_thread(sync.store.search, question, vector, 10)
        assert keyword and by_vector == []  # found by keywords only: no vector exists yet
        assert await sync.store.counts() == (60, 120)  # every fetched item is stored already
        health = sync.health()
        assert health.building and health.stored == 120 and health.ready == 0
        assert health.building_note() == "notes: 0 of 120 passages searchable by meaning so far"
        # No cosine, so the gate judges them by their words: three shared content words pass.
        ranked = FusionRanker("hybrid").rank(question, vector, keyword, by_vector, Gate(0.99))
        assert ranked and all(entry.reason == "words" for entry in ranked)
        embedder.hold.set()
        await asyncio.wait_for(task, 30)
        _, by_vector = await asyncio.to_thread(sync.store.search, question, vector, 10)
        assert by_vector and await sync.store.pending(10) == []
        assert not sync.health().building


async def test_windows_are_embedded_after_every_passage(tmp_path):
    embedder = HeldEmbedder()
    runner = FakeRunner("notes", [long_item(n) for n in range(8)])
    async with Setup(tmp_path, runner, embedder=embedder, fetch_batch=2) as sync:
        await sync.sync_once()
        windows = {text for n in range(8) for section in long_item(n).sections
                   for text in window_texts(section.text)}
        kinds = ["window" if call[0] in windows else "passage" for call in embedder.seen_calls]
        first_window = kinds.index("window")
        assert set(kinds[first_window:]) == {"window"}  # not one passage after the first window
        embedded = {text for call in embedder.seen_calls for text in call}
        assert windows <= embedded
        assert await sync.store.get_state(WINDOWS_STATE) == "done"
        health = sync.health()
        assert health.state == "ok" and health.passages == 16


async def test_the_windows_pass_resumes_after_a_kill(tmp_path):
    embedder = HeldEmbedder()
    runner = FakeRunner("notes", [long_item(n) for n in range(4)])
    windows = {text for n in range(4) for section in long_item(n).sections
               for text in window_texts(section.text)}
    original = embedder.embed

    async def dies_at_the_first_window(texts, kind):  # type: ignore[no-untyped-def]
        if texts[0] in windows:
            raise asyncio.CancelledError  # the process is stopped in the windows pass
        return await original(texts, kind)

    embedder.embed = dies_at_the_first_window  # type: ignore[method-assign]
    async with Setup(tmp_path, runner, embedder=embedder, embed_batch=4) as sync:
        with pytest.raises(asyncio.CancelledError):
            await sync.sync_once()
        assert await sync.store.pending(10) == []  # every passage has its vector
        assert await sync.store.get_state(WINDOWS_STATE) == "due"
    embedder.embed = original  # type: ignore[method-assign]
    embedder.seen_calls.clear()
    async with Setup(tmp_path, runner, embedder=embedder, embed_batch=4) as sync:
        await sync.sync_once()  # a reconcile: nothing changed, but the windows are due
        assert runner.fetch_calls and len(runner.fetch_calls) == 1  # only the first build fetched
        assert {text for call in embedder.seen_calls for text in call} == windows
        assert await sync.store.get_state(WINDOWS_STATE) == "done"
        embedder.seen_calls.clear()
        await sync.sync_once()
        assert embedder.seen_calls == []  # done: a later start embeds nothing


class CostClock(ToyEmbedder):
    """A toy embedder whose every call advances a fake clock by its characters (1,000 a second)
    plus a fixed 0.02 s, and that records the estimate of the time left at each call."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0
        self.sync = None
        self.estimates: list[tuple[float, float | None]] = []

    def clock(self) -> float:
        return self.now

    async def embed(self, texts, kind):  # type: ignore[no-untyped-def]
        if kind == "passage" and self.sync is not None:
            self.estimates.append((self.now, self.sync.health().eta_seconds))
        self.now += sum(len(text) for text in texts) / 1000 + 0.02
        return await super().embed(texts, kind)


async def test_the_time_left_is_within_30_percent_once_a_fifth_is_done(tmp_path):
    embedder = CostClock()
    items = [long_item(n) if n % 3 else item(n) for n in range(90)]  # long and short items mixed
    runner = FakeRunner("notes", items)
    async with Setup(tmp_path, runner, embedder=embedder, clock=embedder.clock, embed_batch=8,
                     fetch_batch=10) as sync:
        embedder.sync = sync
        await sync.sync_once()
    end = embedder.now
    checked = 0
    for moment, eta in embedder.estimates:
        if moment < end / 5:
            continue
        assert eta is not None
        actual = end - moment
        assert abs(eta - actual) <= 0.3 * actual + 0.05, (moment, eta, actual)
        checked += 1
    assert checked > 10


async def test_a_build_stopped_before_its_vectors_resumes_as_a_build(tmp_path):
    embedder = HeldEmbedder()
    runner = FakeRunner("notes", [item(n) for n in range(20)])
    original = embedder.embed

    async def dies_in_the_second_call(texts, kind):  # type: ignore[no-untyped-def]
        if len(embedder.seen_calls) == 1:
            raise asyncio.CancelledError  # the process is stopped while passages wait
        return await original(texts, kind)

    embedder.embed = dies_in_the_second_call  # type: ignore[method-assign]
    async with Setup(tmp_path, runner, embedder=embedder, embed_batch=10) as sync:
        with pytest.raises(asyncio.CancelledError):
            await sync.sync_once()
    embedder.embed = original  # type: ignore[method-assign]
    embedder.seen_calls.clear()
    notes: list[str | None] = []

    async def noting(texts, kind):  # type: ignore[no-untyped-def]
        notes.append(sync.health().building_note())
        assert sync.health().state == "indexing"
        return await original(texts, kind)

    embedder.embed = noting  # type: ignore[method-assign]
    async with Setup(tmp_path, runner, embedder=embedder, embed_batch=10) as sync:
        await sync.sync_once()  # a reconcile that finds passages without vectors
        assert notes and all(note is not None for note in notes)  # answers say it is still building
        assert await sync.store.pending(10) == [] and not sync.health().building
        assert sync.health().state == "ok"


class SpanEmbedder(HeldEmbedder):
    """A toy embedder that can pool spans: each span's vector is the toy vector of its text."""

    def __init__(self) -> None:
        super().__init__()
        self.span_calls: list[list[list[str]]] = []

    async def embed_spans(self, texts, spans):  # type: ignore[no-untyped-def]
        pairs = list(zip(texts, spans, strict=True))
        self.span_calls.append([[text[start:end] for start, end in each] for text, each in pairs])
        vectors = await HeldEmbedder.embed(self, texts, "passage")
        return vectors, [toy_vectors([" ".join(text[start:end].split()) for start, end in each])
                         for text, each in pairs]


async def test_windows_come_from_the_passages_pass_when_the_embedder_pools_spans(tmp_path):
    embedder = SpanEmbedder()
    runner = FakeRunner("notes", [long_item(n) for n in range(4)] + [item(n) for n in range(3)])
    async with Setup(tmp_path, runner, embedder=embedder, fetch_batch=2) as sync:
        await sync.sync_once()
        windows = {text for n in range(4) for section in long_item(n).sections
                   for text in window_texts(section.text)}
        embedded = {text for call in embedder.seen_calls for text in call}
        assert not windows & embedded  # not one window was a forward pass of its own
        pooled = {" ".join(span.split()) for call in embedder.span_calls for each in call for span in each}
        assert pooled == windows
        cached = await sync.vector_cache.get_many([digest_of(text) for text in windows])
        assert len(cached) == len(windows)
        for text in windows:  # each window's vector is the one its span was given
            assert cached[digest_of(text)] == pytest.approx(toy_vectors([text])[0], abs=1e-6)
        assert await sync.store.get_state(WINDOWS_STATE) == "done" and sync.health().state == "ok"


async def test_an_embedder_that_declines_spans_gets_its_windows_as_texts(tmp_path):
    embedder = SpanEmbedder()

    async def declines(texts, spans):  # type: ignore[no-untyped-def]
        return None

    embedder.embed_spans = declines  # type: ignore[method-assign]
    runner = FakeRunner("notes", [long_item(n) for n in range(2)])
    async with Setup(tmp_path, runner, embedder=embedder) as sync:
        await sync.sync_once()
        windows = {text for n in range(2) for section in long_item(n).sections
                   for text in window_texts(section.text)}
        assert windows <= {text for call in embedder.seen_calls for text in call}
        assert sync.health().state == "ok"


class WordCounter(HeldEmbedder):
    """A held embedder whose tokens are not characters: a word is one token, a digit two more."""

    def count_tokens(self, text: str) -> int:
        return len(text.split()) + 2 * sum(character.isdigit() for character in text)


async def test_texts_go_to_the_embedder_fewest_tokens_first_by_its_own_count(tmp_path):
    embedder = WordCounter()
    items = [long_item(n * 337) for n in range(6)]  # numbers of one to four digits
    windows = {text for one in items for section in one.sections for text in window_texts(section.text)}
    async with Setup(tmp_path, FakeRunner("notes", items), embedder=embedder, embed_batch=4) as sync:
        await sync.sync_once()
    sent = [text for call in embedder.seen_calls for text in call]
    for kind in (False, True):  # the passages' pass, then the windows'
        texts = [text for text in sent if (text in windows) is kind]
        counts = [embedder.count_tokens(text) for text in texts]
        assert counts == sorted(counts)
        assert [len(text) for text in texts] != sorted(map(len, texts))  # characters would differ
    assert set(sent) >= windows


class ThreadNoting(WordCounter):
    """A word counter that notes which threads it counted on."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: set[int] = set()

    def count_tokens(self, text: str) -> int:
        self.threads.add(threading.get_ident())
        return super().count_tokens(text)


async def test_tokens_are_counted_off_the_event_loop(tmp_path):
    embedder = ThreadNoting()
    items = [long_item(n * 337) for n in range(3)]
    async with Setup(tmp_path, FakeRunner("notes", items), embedder=embedder, embed_batch=4) as sync:
        await sync.sync_once()
        assert sync.health().state == "ok"
    assert embedder.threads  # both passes sorted their texts by count
    assert threading.get_ident() not in embedder.threads  # never on the loop's thread
