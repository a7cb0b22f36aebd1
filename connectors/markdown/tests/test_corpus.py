"""The sample corpus indexes cleanly: ids are the file names eval's accepted answers name."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Notes

CORPUS = Path(__file__).resolve().parents[3] / "corpus"


@pytest.mark.parametrize("language", ["en", "de"])
def test_the_corpus_indexes_cleanly(tmp_path, language):
    folder = CORPUS / language
    files = sorted(path.name for path in folder.glob("*.md"))
    assert files, f"{folder} holds no articles"
    notes = Notes(folder)
    result = notes.fetch_all()
    assert result.code == 0
    assert result.stderr == ""
    assert sorted(result.by_id) == files
    for name in files:
        item = result.by_id[name]
        text = (folder / name).read_text(encoding="utf-8")
        heading = next(line[2:].strip() for line in text.splitlines() if line.startswith("# "))
        assert item["title"] == heading
        url = next(line for line in text.splitlines() if line.startswith("url: "))
        assert item["url"] == url.removeprefix("url: ").strip('"')
        assert item["url"].startswith("https://")
        assert "path" not in item
        # The title line is not repeated, and the paragraphs keep their blank lines between them.
        assert all(section["heading"] is None for section in item["sections"])
        body = "\n\n".join(section["text"] for section in item["sections"])
        assert f"# {heading}" not in body
        paragraphs = [block for block in text.split("---", 2)[2].split("\n\n") if block.strip()]
        assert body.count("\n\n") == len(paragraphs) - 2  # every paragraph but the title line
