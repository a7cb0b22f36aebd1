"""The sample corpus (corpus/): its questions and paragraphs, an instance indexing it (settings,
the benchmark password, a kernel whose vector cache outlives the run), and its files read as the
markdown connector reads them into a small study index."""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import sys
import time
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from common import ROOT
from passageway.builtin.eval.cases import Case
from passageway.kernel.records import Item, Section
from passageway.kernel.store import Candidate, StoredItem
from passageway.kernel.text.chunking import passages_for

PASSWORD = "bench-password-not-secret"


def corpus_settings(folder: Path, engine: str = "auto") -> tuple[Any, dict[str, str]]:
    from passageway.kernel.config import load_settings

    lines = [f'[embedder]\nengine = "{engine}"\n'] if engine != "auto" else []
    for language in ("en", "de"):
        lines += [
            "[[connector]]",
            f'name = "corpus-{language}"',
            f'command = ["{sys.executable}", "-m", "passageway_connector_markdown"]',
            f'env = {{ FOLDER = "{ROOT / "corpus" / language}" }}',
            "",
        ]
    config = folder / "passageway.toml"
    config.write_text("\n".join(lines), encoding="utf-8")
    environ = {**os.environ, "PASSAGEWAY_CONFIG": str(config), "PASSAGEWAY_DATA_DIR": str(folder / "data"),
               "PASSAGEWAY_LOGIN_PASSWORD": PASSWORD}
    environ.pop("PASSAGEWAY_INSTANCE", None)
    return load_settings(environ), environ


def questions(count: int | None = None) -> list[str]:
    """The sample corpus's questions (corpus/questions.toml), the first ``count`` of them if given."""
    document = tomllib.loads((ROOT / "corpus" / "questions.toml").read_text(encoding="utf-8"))
    return [case["query"] for case in document["case"]][:count]


def open_bench_kernel(settings: Any, manager: Any, environ: dict[str, str]) -> Any:
    """A started kernel with its vector cache in the shared data folder (as eval keeps it), so
    that a rerun does not embed the corpus again; questions are embedded every time they are asked."""
    from passageway.kernel.app import Kernel

    return Kernel.open(settings, manager, environ, vector_cache_folder=settings.shared_data_dir)


CORPUS = ROOT / "corpus"


def read_item(path: Path) -> Item:
    text = path.read_text("utf-8")
    _, front, body = text.split("---\n", 2)
    meta = {}
    for line in front.splitlines():
        key, _, value = line.partition(":")
        meta[key.strip()] = value.strip().strip('"')
    lines = body.strip().splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return Item(
        id=path.name,
        title=meta["title"],
        url=meta["url"],
        version="1",
        sections=(Section(text="\n".join(lines).strip()),),
    )


class StudyStore:
    """One source: passages, their vectors, an FTS5 index (unicode61, remove_diacritics 2)."""

    def __init__(self, source: str, items: Sequence[Item], vectors: np.ndarray, passages: list) -> None:
        self.source = source
        self.items_by_id = {item.id: item for item in items}
        self.passages = passages
        self.vectors = vectors
        self.db = sqlite3.connect(":memory:")
        self.db.execute(
            "CREATE VIRTUAL TABLE fts USING fts5(title, heading, text, "
            "tokenize='unicode61 remove_diacritics 2')"
        )
        for key, passage in enumerate(passages):
            item = self.items_by_id[passage.item_id]
            self.db.execute(
                "INSERT INTO fts(rowid, title, heading, text) VALUES (?, ?, ?, ?)",
                (key, item.title, passage.heading or "", passage.text),
            )
        self.fail = False

    def _candidate(self, key: int, similarity: float, rank: int, keyword_score: float = 0.0) -> Candidate:
        passage = self.passages[key]
        item = self.items_by_id[passage.item_id]
        return Candidate(
            source=self.source,
            passage_key=key,
            item_id=item.id,
            title=item.title,
            url=item.url,
            heading=passage.heading,
            text=passage.text,
            similarity=similarity,
            rank=rank,
            keyword_score=keyword_score,
            weight=item.weight,
            links=item.links,
        )

    async def keyword_search(self, question: str, vector: np.ndarray, limit: int) -> list[Candidate]:
        terms = [word for word in question.split() if word]
        if not terms:
            return []
        match = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
        rows = self.db.execute(
            "SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT ?", (match, limit)
        ).fetchall()
        return [
            self._candidate(key, float(self.vectors[key] @ vector), rank, -score)
            for rank, (key, score) in enumerate(rows)
        ]

    async def vector_search(self, vector: np.ndarray, limit: int) -> list[Candidate]:
        similarities = self.vectors @ vector
        order = np.argsort(-similarities)[:limit]
        return [self._candidate(int(key), float(similarities[key]), rank) for rank, key in enumerate(order)]

    async def items(self, item_ids: Sequence[str]) -> list[StoredItem]:
        return [
            StoredItem(i, self.items_by_id[i].title, self.items_by_id[i].url)
            for i in item_ids
            if i in self.items_by_id
        ]


def build(model) -> dict[str, StudyStore]:
    stores = {}
    for language in ("en", "de"):
        items = [read_item(path) for path in sorted((CORPUS / language).glob("*.md"))]
        passages = [passage for item in items for passage in passages_for(item)]
        inputs = [passage.embedding_input for passage in passages]
        digest = hashlib.sha256("\n\x00".join(inputs).encode()).hexdigest()[:16]
        cache = Path(f"/tmp/passageway-gate-study-{digest}.npy")
        if cache.exists():
            vectors = np.load(cache)
        else:
            started = time.perf_counter()
            vectors = np.asarray(model.passage(inputs), dtype=np.float32)
            np.save(cache, vectors)
            print(
                f"embedded {len(inputs)} {language} passages in {time.perf_counter() - started:.1f} s",
                file=sys.stderr,
            )
        stores[language] = StudyStore(f"corpus-{language}", items, vectors, passages)
    return stores


def corpus_paragraphs(count: int) -> list[str]:
    """Paragraphs of the English articles, taken from each file in turn."""
    per_file = []
    for path in sorted((ROOT / "corpus" / "en").glob("*.md")):
        text = path.read_text(encoding="utf-8").split("---", 2)[-1]
        blocks = [block.strip() for block in re.split(r"\n\s*\n", text)]
        per_file.append([block for block in blocks if len(block) > 200 and not block.startswith("#")])
    chosen: list[str] = []
    while len(chosen) < count and any(per_file):
        for blocks in per_file:
            if blocks and len(chosen) < count:
                chosen.append(blocks.pop(0))
    return chosen


def paste_twins(pastes: Sequence[Case], bare: Sequence[Case]) -> list[tuple[Case, Case]]:
    """Each pasted question with the bare case that asks the same (same files, answer, language)."""
    pairs = []
    for case in pastes:
        if case.group == "paste-only":
            continue
        german = case.group_label.endswith("-de")
        (twin,) = [other for other in bare
                   if (other.expect, other.expect_text) == (case.expect, case.expect_text)
                   and other.group_label.endswith("-de") == german and "en-only" not in other.group_label]
        pairs.append((case, twin))
    return pairs
