"""Keyword-only retrieval on the sample corpus, for each FTS5 tokenizer option the store could use.

    uv run python bench/keyword_search.py                 # the measurement
    uv run python bench/keyword_search.py --repeat 100    # query times on a 100 times larger index

Indexes ``corpus/en`` and ``corpus/de`` (one source per language, as in real use) with the
builtin chunker, then asks the 70 answerable questions of ``corpus/questions.toml`` through
keyword search alone, merges both sources by BM25 score and prints per option: hit@1 and hit@3
(an accepted article first, or among the top three passages, also per language group) and
answer@3 (a top-three passage contains the case's ``expect_text``; the corpus is small enough
that article-level hit@3 saturates). Vectors play no part: the toy embedder fills them. Each
option runs twice, with the question as written and reduced to its content words the way
``passageway.kernel.query.search.keyword_query`` does (when that module is available).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import re
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs

from passageway.builtin.storage import SqliteStore, tables
from passageway.builtin.storage import store as store_module
from passageway.builtin.storage.keyword import match_terms
from passageway.kernel.records import Item, Section
from passageway.kernel.store import Candidate, ItemUpdate
from passageway.kernel.text.chunking import passages_for
from passageway.testing.toy_embedder import toy_vectors

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"

DEFAULT_TOKENIZER = "unicode61 remove_diacritics 2"
OPTIONS: dict[str, tuple[str, bool]] = {  # the FTS5 tokenizer, and whether words become prefixes
    "unicode61 remove_diacritics 2 (default)": (DEFAULT_TOKENIZER, False),
    "unicode61 remove_diacritics 2, prefix*": (DEFAULT_TOKENIZER, True),
    "porter unicode61 remove_diacritics 2": ("porter unicode61 remove_diacritics 2", False),
    "trigram": ("trigram", False),
}


@contextlib.contextmanager
def variant(tokenizer: str, prefix: bool) -> Iterator[None]:
    """Stores opened meanwhile use ``tokenizer`` for new files, and ask with prefix terms if
    ``prefix`` (the store has no such options: its schema and query are patched here)."""
    migrations, terms = tables.MIGRATIONS, store_module.match_terms
    tables.MIGRATIONS = tuple(tuple(statement.replace(DEFAULT_TOKENIZER, tokenizer) for statement in step)
                              for step in migrations)
    store_module.match_terms = functools.partial(match_terms, prefix=prefix)  # type: ignore[assignment]
    try:
        yield
    finally:
        tables.MIGRATIONS, store_module.match_terms = migrations, terms


def read_article(path: Path, language: str) -> Item:
    text = path.read_text(encoding="utf-8")
    _, front, body = text.split("---", 2)
    title = re.search(r'^title:\s*"?(.*?)"?\s*$', front, re.M)
    url = re.search(r'^url:\s*"?(.*?)"?\s*$', front, re.M)
    body = re.sub(r"^# .*\n", "", body.strip(), count=1)
    return Item(id=f"{language}/{path.name}", title=title.group(1) if title else path.stem,
                url=url.group(1) if url else "", version="1", sections=(Section(body.strip()),))


async def build(folder: Path, language: str, repeat: int = 1) -> SqliteStore:
    store = SqliteStore(folder / f"{language}.db", language)
    await store.open()
    await store.reset("toy-hash-64", 64)
    updates = []
    for path in sorted((CORPUS / language).glob("*.md")):
        article = read_article(path, language)
        passages = passages_for(article)
        vectors = toy_vectors([p.embedding_input for p in passages])
        for copy in range(repeat):  # copies keep the file name, so they still count as hits
            item = attrs.evolve(article, id=f"{language}/{path.name}" if copy == 0 else
                                f"{language}/{path.name}#{copy}")
            updates.append(ItemUpdate(item, passages, vectors))
    await store.apply(updates, [])
    return store


def _file(candidate: Candidate) -> str:
    return candidate.item_id.split("/", 1)[1].split("#", 1)[0]


def query_forms() -> dict[str, Callable[[str], str]]:
    forms: dict[str, Callable[[str], str]] = {"as written": lambda question: question}
    try:
        from passageway.kernel.query.search import keyword_query
    except ImportError:
        return forms
    forms["content words"] = keyword_query
    return forms


async def measure(repeat: int) -> None:
    cases = [case for case in tomllib.loads((CORPUS / "questions.toml").read_text("utf-8"))["case"]
             if case.get("expect")]
    vector = toy_vectors(["unused"])[0]
    if repeat > 1:
        print(f"every article indexed {repeat} times\n")
    print(f"{len(cases)} answerable questions, keyword search alone. hit@1 / hit@3: an accepted article")
    print("first / among the top three passages; answer@3: a top-three passage holds the expected text\n")
    print(f"{'tokenizer option':42} {'query':14} {'hit@1':>6} {'hit@3':>6} {'en@3':>6} {'de@3':>6} "
          f"{'answer@3':>8} {'ms/q':>6}")
    for name, (tokenizer, prefix) in OPTIONS.items():
        with tempfile.TemporaryDirectory() as folder, variant(tokenizer, prefix):
            stores = [await build(Path(folder), language, repeat) for language in ("en", "de")]
            try:
                for form_name, form in query_forms().items():
                    hits: dict[str, list[bool]] = {"en": [], "de": []}
                    firsts: list[bool] = []
                    answers: list[bool] = []
                    began = time.perf_counter()
                    for case in cases:
                        found: list[Candidate] = []
                        for store in stores:
                            found.extend(store.search(form(case["query"]), vector, 10)[0])
                        found.sort(key=lambda candidate: -candidate.keyword_score)
                        names = {_file(candidate) for candidate in found[:3]}
                        hits[case["group"]].append(bool(names & set(case["expect"])))
                        firsts.append(bool(found) and _file(found[0]) in case["expect"])
                        answers.append(any(text in candidate.text for candidate in found[:3]
                                           for text in case.get("expect_text", [])))
                    per_query = (time.perf_counter() - began) * 1000 / len(cases)
                    every = hits["en"] + hits["de"]
                    print(f"{name:42} {form_name:14} {sum(firsts) / len(firsts):6.3f} "
                          f"{sum(every) / len(every):6.3f} "
                          f"{sum(hits['en']) / len(hits['en']):6.3f} "
                          f"{sum(hits['de']) / len(hits['de']):6.3f} "
                          f"{sum(answers) / len(answers):8.3f} {per_query:6.1f}")
            finally:
                for store in stores:
                    await store.close()
    print(f"\nSQLite {__import__('sqlite3').sqlite_version}, Python {sys.version.split()[0]}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="keyword-only retrieval on the sample corpus")
    parser.add_argument("--repeat", type=int, default=1,
                        help="index every article this many times, to time queries on a larger index")
    asyncio.run(measure(parser.parse_args().repeat))
