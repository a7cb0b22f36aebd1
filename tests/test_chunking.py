"""The chunker: every splitting rule, the embedding input and the digest."""

from __future__ import annotations

import hashlib

from passageway.kernel.records import Item, Section
from passageway.kernel.text.chunking import DEFAULT_CAP, embedding_input, passages_for, split_section


def make_item(*sections: Section, title: str = "Guide", path: tuple[str, ...] = ()) -> Item:
    return Item(id="guide", title=title, url="https://example.test/guide", version="1",
                sections=sections, path=path)


def paragraph(word: str, length: int) -> str:
    text = " ".join([word] * (length // (len(word) + 1) + 1))
    return text[:length].strip()


def test_the_default_cap_splits_a_section_of_two_long_paragraphs():
    first, second = "a" * (DEFAULT_CAP // 2 + 50), "b" * (DEFAULT_CAP // 2 + 50)
    passages = passages_for(make_item(Section(f"{first}\n\n{second}", "Long")))
    assert [p.text for p in passages] == [first, second]
    assert len(passages_for(make_item(Section(f"{first[:100]}\n\n{second[:100]}", "Short")))) == 1


def test_a_short_section_is_one_passage_with_its_heading():
    passages = passages_for(make_item(Section("  Rotate the key every year.  ", "Steps")))
    assert [(p.ordinal, p.heading, p.text) for p in passages] == [(0, "Steps", "Rotate the key every year.")]


def test_empty_sections_are_dropped_and_ordinals_stay_consecutive():
    item = make_item(Section("first", "A"), Section("  \n\n ", "Empty"), Section("", None),
                     Section("third", "C"))
    passages = passages_for(item)
    assert [(p.ordinal, p.heading) for p in passages] == [(0, "A"), (1, "C")]


def test_an_oversize_section_splits_between_paragraphs_never_inside_one():
    paragraphs = [paragraph(word, 600) for word in ("alpha", "bravo", "charlie", "delta")]
    pieces = split_section("\n\n".join(paragraphs), cap=1500)
    assert len(pieces) == 2
    assert pieces == ["\n\n".join(paragraphs[:2]), "\n\n".join(paragraphs[2:])]
    assert all(len(piece) <= 1500 for piece in pieces)


def test_passages_are_filled_greedily_up_to_the_cap():
    paragraphs = [paragraph(f"w{n}", 400) for n in range(7)]
    pieces = split_section("\n\n".join(paragraphs), cap=1000)
    # 400 + 2 + 400 = 802 fits, a third would make 1204.
    assert [piece.count("\n\n") + 1 for piece in pieces] == [2, 2, 2, 1]


def test_a_single_paragraph_over_the_cap_stays_whole():
    long = paragraph("word", 2000)
    before, after = paragraph("intro", 300), paragraph("outro", 300)
    pieces = split_section(f"{before}\n\n{long}\n\n{after}", cap=1500)
    assert pieces == [before, long, after]


def test_a_list_is_not_split_even_when_loose():
    items = "\n\n".join(f"- point {n}: " + paragraph("listword", 150) for n in range(12))
    lead = paragraph("lead", 1000)
    pieces = split_section(f"{lead}\n\n{items}\n\nAfter the list.", cap=1500)
    assert pieces[0] == lead
    assert pieces[1].startswith("- point 0") and "- point 11" in pieces[1]
    assert sum("- point" in piece for piece in pieces) == 1


def test_a_list_item_continuation_stays_with_its_list():
    text = "- one\n- two\n\n  more about two\n\n" + paragraph("para", 1490)
    pieces = split_section(text, cap=1500)
    assert pieces[0] == "- one\n- two\n\n  more about two"


def test_an_oversize_code_block_stays_whole_with_its_blank_lines():
    code = "```python\n" + "\n\n".join(f"line_{n} = {n}  # {'x' * 60}" for n in range(40)) + "\n```"
    assert len(code) > 1500
    before = paragraph("before", 500)
    pieces = split_section(f"{before}\n\n{code}\n\nafter", cap=1500)
    assert pieces == [before, code, "after"]


def test_a_hash_comment_in_a_fence_is_text_not_a_split():
    code = "~~~\n# not a heading\n\nstill code\n~~~"
    pieces = split_section(paragraph("x", 1490) + "\n\n" + code, cap=1500)
    assert pieces[-1] == code


def test_a_large_table_splits_between_rows_and_repeats_its_header():
    header = "| Name | Value |\n| --- | ---: |"
    rows = [f"| row {n:02d} | {'v' * 40} |" for n in range(60)]
    table = "\n".join([header, *rows])
    assert len(table) > 1500
    pieces = split_section(table, cap=1500)
    assert len(pieces) >= 2
    seen = []
    for piece in pieces:
        assert piece.startswith(header + "\n")
        assert len(piece) <= 1500
        seen.extend(piece.split("\n")[2:])
    assert seen == rows  # every row once, in order


def test_a_table_part_can_share_a_passage_with_the_text_after_it():
    header = "| a | b |\n|---|---|"
    rows = [f"| {n} | {'y' * 50} |" for n in range(40)]
    pieces = split_section("\n".join([header, *rows]) + "\n\nclosing words", cap=1500)
    assert pieces[-1].startswith(header) and pieces[-1].endswith("closing words")


def test_embedding_input_and_digest():
    item = make_item(Section("Rotate it.", "Steps"), title="Certificates", path=("Ops", "Security"))
    (passage,) = passages_for(item)
    assert passage.embedding_input == "Certificates › Ops › Security › Steps: Rotate it."
    assert passage.digest == hashlib.sha256(passage.embedding_input.encode("utf-8")).hexdigest()


def test_missing_path_and_heading_are_left_out_with_their_separators():
    assert embedding_input("Title", (), None, "text") == "Title: text"
    assert embedding_input("Title", (), "Head", "text") == "Title › Head: text"
    assert embedding_input("Title", ("A",), None, "text") == "Title › A: text"
    assert embedding_input("Title", ("", " "), "", "text") == "Title: text"


def test_the_digest_changes_with_title_path_heading_or_text_only():
    base = passages_for(make_item(Section("body", "H"), title="T", path=("P",)))[0].digest
    assert passages_for(make_item(Section("body", "H"), title="T", path=("P",)))[0].digest == base
    variants = [
        make_item(Section("body", "H"), title="T2", path=("P",)),
        make_item(Section("body", "H"), title="T", path=("Q",)),
        make_item(Section("body", "H2"), title="T", path=("P",)),
        make_item(Section("body!", "H"), title="T", path=("P",)),
    ]
    assert all(passages_for(variant)[0].digest != base for variant in variants)


def test_parts_of_a_split_section_keep_its_heading():
    text = "\n\n".join(paragraph(w, 900) for w in ("one", "two", "three"))
    passages = passages_for(make_item(Section(text, "Long")), cap=1000)
    assert len(passages) == 3
    assert {p.heading for p in passages} == {"Long"}
    assert [p.ordinal for p in passages] == [0, 1, 2]


def test_a_table_header_longer_than_half_the_cap_is_not_repeated():
    # 38.4: a header row of N cells was repeated before every part of N rows: quadratic in size.
    header = "| " + " | ".join(["cell"] * 500) + " |\n|" + "---|" * 500
    table = header + "\n" + "\n".join(f"| row {number} |" for number in range(2_000))
    parts = split_section(table, cap=2000)
    assert parts[0].startswith(header) and not parts[1].startswith("| cell")
    assert sum(len(part) for part in parts) < 2 * len(table)
    small = "| a | b |\n|---|---|\n" + "\n".join(f"| {number} | x |" for number in range(500))
    assert all(part.startswith("| a | b |\n|---|---|") for part in split_section(small, cap=500))
