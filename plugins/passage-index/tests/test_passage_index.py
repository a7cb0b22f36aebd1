"""`passageway index SITE_DIR`: every chunker rule and every field, against files written by hand.

The site in ``passage_index_fixtures/site`` has three pages: one with intro text, nested headings,
a ``####`` heading, a ``#`` comment in a fence, a short section with a subsection, a short one
without, a repeated heading, a navigation list and reader marks; one with a 60-row table, an
oversize code block and a section that splits; and the first page again in another language.
``expected-chunks.json`` holds what the spec says the index must be.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import jsonschema
import pytest
from passageway_passage_index import PassageIndexError, build_index, chunks_document
from passageway_passage_index.chunker import PASSAGE_CAP
from passageway_passage_index.files import load_schema

from passageway.kernel.cli import main

FIXTURES = Path(__file__).parent / "fixtures"
FIELD_ORDER = ("id", "docId", "title", "type", "variant", "headingPath", "url", "markdownUrl",
               "readerFilters", "text", "digest", "search")


@pytest.fixture
def site(tmp_path: Path) -> Path:
    folder = tmp_path / "site-dist"
    shutil.copytree(FIXTURES / "site", folder)
    return folder


def expected_chunks() -> list[dict]:
    chunks = json.loads((FIXTURES / "expected-chunks.json").read_text(encoding="utf-8"))["chunks"]
    for chunk in chunks:
        if isinstance(chunk["text"], list):
            chunk["text"] = "\n".join(chunk["text"])
        heading = " > ".join([chunk["title"], *chunk["headingPath"]])
        embedding_input = f"{heading}\n\n{chunk['text']}"
        chunk["digest"] = hashlib.sha256(embedding_input.encode("utf-8")).hexdigest()
    return chunks


def run_index(capsys, *argv: str) -> dict:
    assert main(["index", *argv]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_index_of_the_hand_made_site_is_the_expected_file(site, capsys):
    summary = run_index(capsys, str(site))
    output = site / "ai" / "chunks.json"
    assert summary == {"status": "ok", "documents": 3, "chunks": 15, "output": str(output.resolve())}
    written = json.loads(output.read_text(encoding="utf-8"))
    expected = expected_chunks()
    assert [chunk["id"] for chunk in written["chunks"]] == [chunk["id"] for chunk in expected]
    for got, want in zip(written["chunks"], expected, strict=True):
        assert got == want, want["id"]
        assert list(got) == [name for name in FIELD_ORDER if name in want]
    assert written["schemaVersion"] == 1
    lines = sorted(
        f"production|current|{language}\t{doc_id}\t{digit * 64}"
        for language, doc_id, digit in (("en", "guide.config", "1"), ("en", "reference.table", "2"),
                                         ("de", "guide.config", "3"))
    )
    assert written["sourceDigest"] == hashlib.sha256("\n".join(lines).encode()).hexdigest()


def test_the_written_files_follow_their_schemas(site, capsys):
    run_index(capsys, str(site))
    document = json.loads((site / "ai" / "chunks.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(load_schema("passage-chunks")).validate(document)
    for name in ("site-documents", "site-search-index"):
        source = "documents.json" if name == "site-documents" else "search-index.json"
        jsonschema.Draft202012Validator(load_schema(name)).validate(json.loads((site / source).read_text()))


def test_size_rules_hold_on_the_fixture(site):
    _, document = chunks_document(site)
    by_id = {(chunk["variant"], chunk["id"]): chunk for chunk in document["chunks"]}
    code = by_id[("production|current|en", "reference.table#generated-code")]["text"]
    assert len(code) > PASSAGE_CAP  # kept whole
    for part in ("keys", "keys~2"):
        table = by_id[("production|current|en", f"reference.table#{part}")]["text"]
        assert len(table) <= PASSAGE_CAP and table.startswith("| Key | Meaning |\n| --- | --- |\n")
    long_parts = [by_id[("production|current|en", f"reference.table#long-section{suffix}")]["text"]
                  for suffix in ("", "~2")]
    assert all(len(text) <= PASSAGE_CAP for text in long_parts)
    assert len(long_parts[0]) + 2 + len(long_parts[1].split("\n\n")[0]) > PASSAGE_CAP  # filled


def test_variants_never_mix(site):
    _, document = chunks_document(site)
    german = [chunk for chunk in document["chunks"] if chunk["variant"].endswith("|de")]
    assert [chunk["id"] for chunk in german] == ["guide.config#intro", "guide.config#drei-stufen"]
    assert all(chunk["url"].startswith("/de/") and chunk["title"] == "Konfiguration organisieren"
               for chunk in german)
    assert all("Konfiguration" not in chunk["text"] for chunk in document["chunks"] if chunk not in german)


def test_without_a_search_index_every_passage_links_to_its_page(site):
    (site / "search-index.json").unlink()
    _, document = chunks_document(site)
    assert all("#" not in chunk["url"] for chunk in document["chunks"])
    expected_ids = [chunk["id"] for chunk in expected_chunks()]
    assert [chunk["id"] for chunk in document["chunks"]] == expected_ids  # IDs do not depend on it


def test_ids_stay_when_body_text_changes_and_follow_a_renamed_heading(site):
    page = site / "guide" / "config.md"
    _, before = chunks_document(site)
    page.write_text(page.read_text().replace("Stands alone.", "Stands alone, now with more words."))
    _, edited = chunks_document(site)
    assert [c["id"] for c in edited["chunks"]] == [c["id"] for c in before["chunks"]]
    pairs = zip(before["chunks"], edited["chunks"], strict=True)
    changed = [old["id"] for old, new in pairs if old["digest"] != new["digest"]]
    assert changed == ["guide.config#lonely"]
    page.write_text(page.read_text().replace("## Lonely", "## Alone"))
    _, renamed = chunks_document(site)
    assert "guide.config#alone" in [c["id"] for c in renamed["chunks"]]
    assert "guide.config#lonely" not in [c["id"] for c in renamed["chunks"]]


def test_reader_marks_and_title_changes_behave_as_documented(site):
    documents = json.loads((site / "documents.json").read_text())
    _, before = chunks_document(site)
    documents["documents"][0]["readerFilters"] = {"audience": ["writers"]}
    documents["documents"][1]["title"] = "Settings"
    (site / "documents.json").write_text(json.dumps(documents))
    _, after = chunks_document(site)
    for old, new in zip(before["chunks"], after["chunks"], strict=True):
        if old["docId"] == "reference.table":
            assert new["digest"] != old["digest"]  # the title is part of the embedding input
        else:
            assert new["digest"] == old["digest"]  # reader marks are not
    assert after["chunks"][0]["readerFilters"] == {"audience": ["writers"]}


def write_page(site: Path, markdown: str) -> Path:
    documents = {"schemaVersion": 1, "documents": [{
        "id": "p", "title": "Page", "type": "guide", "url": "/p", "markdownUrl": "/p.md",
        "publication": {"channel": "c", "version": "v", "language": "en"}, "digest": "a" * 64,
    }]}
    site.mkdir(exist_ok=True)
    (site / "documents.json").write_text(json.dumps(documents))
    (site / "p.md").write_text(markdown)
    return site


def passages(site: Path) -> list[dict]:
    return chunks_document(site)[1]["chunks"]


def test_a_short_section_merges_only_into_a_subsection_right_below(tmp_path):
    long_text = "Long enough. " * 20
    site = write_page(tmp_path / "s", (
        "## Empty\n\n### Child\n\nChild text.\n\n"
        f"## Long\n\n{long_text}\n\n### Kept apart\n\nOwn passage.\n\n"
        "## Exactly short\n\n" + "x" * 199 + "\n\n### Below\n\nBelow text.\n\n"
        "## Not short\n\n" + "y" * 200 + "\n\n### Apart\n\nApart text.\n"
    ))
    found = [(p["id"], p["headingPath"], p["text"]) for p in passages(site)]
    assert found == [
        ("p#empty-child", ["Empty", "Child"], "Child text."),
        ("p#long", ["Long"], long_text.strip()),
        ("p#long-kept-apart", ["Long", "Kept apart"], "Own passage."),
        ("p#exactly-short-below", ["Exactly short", "Below"], "x" * 199 + "\n\nBelow text."),
        ("p#not-short", ["Not short"], "y" * 200),
        ("p#not-short-apart", ["Not short", "Apart"], "Apart text."),
    ]


def test_headings_in_fences_and_before_the_first_section(tmp_path):
    # D5: a ### before the first ## starts a section of its own (it used to stay in the intro,
    # leaving whole pages without an anchor).
    site = write_page(tmp_path / "s", (
        "# Page\n\nIntro.\n\n### Early\n\nOwn section.\n\n"
        "## Real\n\n~~~\n## not a heading\n### nor this\n~~~\n\nAfter the fence.\n"
    ))
    found = [(p["id"], p["headingPath"], p["text"]) for p in passages(site)]
    assert found == [
        ("p#intro", [], "Intro."),
        ("p#early", ["Early"], "Own section."),
        ("p#real", ["Real"], "~~~\n## not a heading\n### nor this\n~~~\n\nAfter the fence."),
    ]


def test_slug_collisions_and_split_parts_get_suffixes(tmp_path):
    big = "\n\n".join("z" * 900 for _ in range(3))
    site = write_page(
        tmp_path / "s", f"## Intro\n\nA heading called intro.\n\n## Notes\n\n{big}\n\n## Notes!\n\nOther.\n"
    )
    ids = [p["id"] for p in passages(site)]
    # Nothing before the first heading: no intro passage, so the heading takes the plain slug.
    assert ids == ["p#intro", "p#notes", "p#notes~2", "p#notes-2"]
    write_page(site, "Real intro text.\n\n## Intro\n\nA heading called intro.\n")
    assert [p["id"] for p in passages(site)] == ["p#intro", "p#intro-2"]


def test_navigation_lists_are_left_out_of_paragraphs_only(tmp_path):
    site = write_page(tmp_path / "s", (
        "## See also\n\n- [One](/one)\n- [Two](/two \"title\").\n\n"
        "1. [Three](/three) explains more.\n2. Four\n\n> Quoted *words* with `code_span`.\n"
    ))
    (passage,) = passages(site)
    assert "- [One](/one)" in passage["text"]
    assert passage["search"] == {
        "schemaVersion": 1,
        "paragraphs": ["Three explains more.", "Four", "Quoted words with code_span."],
        "literalLines": [],
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["documents"][0].pop("url"), "documents.json: documents/0: 'url' is a required property"),
        (lambda d: d["documents"][1].update(markdownUrl="/../x.md"),
         "documents.json: documents/1/markdownUrl"),
        (lambda d: d["documents"][0].update(digest="abc"), "documents.json: documents/0/digest"),
        (lambda d: d["documents"][0].update(extra=1), "documents.json: documents/0: Additional properties"),
        (lambda d: d["documents"][0]["publication"].update(language="en|x"),
         "documents.json: documents/0/publication/language"),
        (lambda d: d["documents"][1].update(id="guide.config"),
         "documents.json: documents/1/id: 'guide.config' is also documents/0"),
        (lambda d: d["documents"][1].update(url="/guide/config"), "documents.json: documents/1/url"),
        (lambda d: d["documents"][1].update(markdownUrl="/missing.md"),
         "documents.json: documents/1/markdownUrl: /missing.md does not exist"),
        (lambda d: d.update(schemaVersion=2), "documents.json: schemaVersion"),
    ],
)
def test_a_wrong_documents_file_is_refused_naming_the_file_and_field(site, capsys, change, message):
    documents = json.loads((site / "documents.json").read_text())
    change(documents)
    (site / "documents.json").write_text(json.dumps(documents))
    assert main(["index", str(site)]) == 2
    error = capsys.readouterr().err
    assert message in error and error.count("\n") == 1, error
    assert not (site / "ai").exists()


def test_a_wrong_search_index_or_missing_input_is_refused(site, capsys):
    (site / "search-index.json").write_text(json.dumps({"schemaVersion": 1, "pages": [{"url": "/x"}]}))
    with pytest.raises(PassageIndexError, match=r"search-index.json: pages/0: 'headings' is a required"):
        build_index(site)
    (site / "documents.json").unlink()
    assert main(["index", str(site)]) == 2
    error = capsys.readouterr().err
    assert "no HTML page with text" in error and "build the site first" in error
    assert all(name in error for name in ("Sphinx", "MkDocs", "VitePress", "Docusaurus")), error
    assert main(["index", str(site / "nowhere")]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_a_rerun_replaces_the_file(site, capsys):
    run_index(capsys, str(site))
    page = site / "de" / "guide" / "config.md"
    page.write_text(page.read_text() + "\n## Neu\n\nNeuer Abschnitt.\n")
    assert run_index(capsys, str(site))["chunks"] == 16
    written = json.loads((site / "ai" / "chunks.json").read_text())
    assert written["chunks"][-1]["id"] == "guide.config#neu"
    assert not list((site / "ai").glob(".*tmp"))


def test_headings_match_the_search_index_without_inline_markdown_and_in_order(tmp_path):
    site = write_page(tmp_path / "s", (
        "# Page\r\n\r\n## Run `passageway index` *twice*\r\n\r\nFirst.\r\n\r\n"
        "## Steps\r\n\r\nOne.\r\n\r\n## Steps ##\r\n\r\nTwo.\r\n"
    ))
    headings = [
        {"level": 1, "text": "Page", "id": "page"},
        {"level": 2, "text": "Run passageway index twice", "id": "run"},
        {"level": 2, "text": "Steps", "id": "steps"},
        {"level": 2, "text": "Steps", "id": "steps-again"},
    ]
    search_index = {"schemaVersion": 1, "pages": [{"url": "/p", "headings": headings}]}
    (site / "search-index.json").write_text(json.dumps(search_index))
    found = [(p["id"], p["headingPath"], p["url"], p["text"]) for p in passages(site)]
    assert found == [
        ("p#run-passageway-index-twice", ["Run passageway index twice"], "/p#run", "First."),
        ("p#steps", ["Steps"], "/p#steps", "One."),
        ("p#steps-2", ["Steps"], "/p#steps-again", "Two."),
    ]
