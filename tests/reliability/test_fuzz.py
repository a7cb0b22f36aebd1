"""Property-based fuzzing (hypothesis) of what reads outside input.

* the connector-record validator: any bytes on a connector's stdout end as records or as the
  runner's own refusal, never as another exception, and every record it accepts can be chunked,
  digested and stored (its text is UTF-8);
* the configuration loader: any ``passageway.toml`` loads or fails with a ``ConfigError``;
* the markdown parser (the SDK's ``split_markdown`` and the markdown connector on a file of any
  bytes) and the chunker: no exception, no empty passage;
* the question path: any question, through ``Kernel.recall`` and the hook's filters, answers with
  at most three passages and leaves health alone.
"""

from __future__ import annotations

import asyncio
import json
import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from passageway.builtin.transport.hook_endpoint import _session_key, folder_words
from passageway.kernel.connector.lines import LineProblem, parse_lines
from passageway.kernel.errors import ConfigError
from passageway.kernel.query.prompt import is_question
from passageway.kernel.records import Question
from passageway.kernel.text.chunking import digest_of, passages_for, split_section
from tests.reliability.conftest import scale

EXAMPLES = scale(60, 2500)
COUNTS: dict[str, int] = {}
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=not scale(False, True),
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])


def counted(name: str) -> None:
    COUNTS[name] = COUNTS.get(name, 0) + 1


# Text with the characters that break things: surrogates, controls, markdown and FTS5 syntax.
NASTY = st.text(alphabet=st.one_of(
    st.characters(codec=None),  # any code point, lone surrogates included
    st.sampled_from([*'#|-*`~>[](){}"^:\\\n\t\r\x00', "\ud800", "\udfff", "\ufeff", "›"]),
), max_size=300)
JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(),
                         st.floats(allow_nan=False, allow_infinity=False), NASTY)
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(NASTY, inner, max_size=4)), max_leaves=12)
ITEM_KEYS = ["id", "title", "url", "version", "sections", "weight", "path", "links", "labels", "updated"]


@st.composite
def item_like(draw: Any) -> dict[str, Any]:
    """A record near a valid ``item``: the right keys, some values wrong, text of any kind."""
    record: dict[str, Any] = {
        "id": draw(NASTY.filter(bool)), "title": draw(NASTY), "url": draw(NASTY), "version": draw(NASTY),
        "sections": draw(st.lists(st.fixed_dictionaries(
            {"text": NASTY}, optional={"heading": st.one_of(st.none(), NASTY)}), max_size=4)),
    }
    for key in draw(st.lists(st.sampled_from(ITEM_KEYS), max_size=3)):
        record[key] = draw(JSON_VALUES)
    return record


def line_of(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=True, allow_nan=False).encode()


@FUZZ
@given(lines=st.lists(st.one_of(
    st.binary(max_size=200),
    item_like().map(line_of),
    JSON_VALUES.map(line_of),
), max_size=5), mode=st.sampled_from(["check", "list", "fetch"]))
def test_the_record_validator_refuses_or_accepts_never_crashes(lines, mode):
    counted("connector records")
    try:
        parsed = parse_lines(lines, 1, mode)
    except LineProblem:
        return
    for _number, _line, record, _note in parsed:
        if mode == "fetch" and record is not None:
            for passage in passages_for(record, cap=200):
                passage.embedding_input.encode("utf-8")  # storable as UTF-8
                assert passage.text.strip()


TOML_KEYS = ["name", "command", "env", "secrets", "timeout", "kind", "model", "ranker", "store",
             "max_line_bytes", "max_output_bytes", "max_delete_fraction", "poll_seconds", "host", "port",
             "download", "instructions", "min_similarity", "nmae"]


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if value == value and abs(value) != float("inf") else "0"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(entry) for entry in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    return json.dumps(str(value))


TOML_SCALARS = st.one_of(st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False),
                         st.text(max_size=30), st.sampled_from(["env:X", "env:", "/usr/bin/python3", "toy"]))
TOML_VALUES = st.recursive(TOML_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(TOML_KEYS), inner, max_size=3)),
    max_leaves=6)


@st.composite
def toml_document(draw: Any) -> str:
    if draw(st.booleans()):
        return draw(st.text(alphabet=string.printable, max_size=200))  # mostly not TOML at all
    parts = []
    for key in draw(st.lists(st.sampled_from(TOML_KEYS), max_size=3, unique=True)):
        parts.append(f"{key} = {toml_value(draw(TOML_VALUES))}")
    for table in draw(st.lists(st.sampled_from(["[embedder]", "[[connector]]", "[embedders.x]", "[x]"]),
                               max_size=3)):
        parts.append(table)
        for key in draw(st.lists(st.sampled_from(TOML_KEYS), max_size=4, unique=True)):
            parts.append(f"{key} = {toml_value(draw(TOML_VALUES))}")
    return "\n".join(parts) + "\n"


@FUZZ
@given(document=toml_document())
def test_the_config_loader_loads_or_names_the_problem(document, tmp_path_factory):
    from passageway.kernel.config import load_settings

    counted("configuration files")
    folder = tmp_path_factory.mktemp("config")
    path = folder / "passageway.toml"
    path.write_text(document, encoding="utf-8", errors="surrogatepass")
    environ = {"HOME": str(folder), "PASSAGEWAY_CONFIG": str(path), "PASSAGEWAY_DATA_DIR": str(folder / "d")}
    try:
        load_settings(environ)
    except ConfigError as error:
        assert str(error) and "Traceback" not in str(error)


MARKDOWN = st.lists(st.one_of(
    NASTY,
    st.sampled_from(["# Title", "## Part", "###### Deep", "```", "~~~", "    code", "- item", "1. item",
                     "| a | b |", "|---|---|", "| 1 | 2 |", "---", "title: x", "> quote", "", "\ufeff# BOM"]),
), max_size=30).map("\n".join)


@FUZZ
@given(text=MARKDOWN, skip=st.booleans(), cap=st.integers(20, 1200))
def test_the_markdown_parser_and_the_chunker_never_crash(text, skip, cap):
    from passageway_sdk.markdown import split_markdown

    counted("markdown documents")
    for section in split_markdown(text, skip_first_h1=skip):
        assert section["text"]
        for piece in split_section(section["text"], cap):
            assert piece.strip()
            digest_of(piece)


@FUZZ
@given(data=st.binary(max_size=600) | MARKDOWN.map(lambda text: text.encode("utf-8", "surrogatepass")))
def test_the_markdown_connector_reads_any_file(data, tmp_path_factory):
    from passageway_connector_markdown.connector import MarkdownConnector

    counted("markdown files")
    folder = tmp_path_factory.mktemp("notes")
    (folder / "note.md").write_bytes(data)
    connector = MarkdownConnector({"FOLDER": str(folder)})
    versions = connector.versions()
    for record in connector.fetch(list(versions)):
        line_of(record).decode("ascii")  # the record is JSON the runner accepts as text


@pytest.fixture(scope="module")
def kernel_loop(tmp_path_factory):  # type: ignore[no-untyped-def]
    from tests.server_helpers import make_kernel, write_instance

    loop = asyncio.new_event_loop()
    kernel = make_kernel(write_instance(tmp_path_factory.mktemp("question")))
    loop.run_until_complete(kernel.start_embedder())
    loop.run_until_complete(kernel.open_stores())
    assert loop.run_until_complete(kernel.sync_once()) == {"notes": None}
    yield kernel, loop
    loop.run_until_complete(kernel.close_stores())
    loop.run_until_complete(kernel.close_embedder())
    loop.close()


QUESTIONS = st.one_of(NASTY, st.lists(st.sampled_from(
    ['"', "NEAR(", ")", "*", "AND", "OR", "NOT", "^", "telescope", "lens", "title:", "-", "+", "\x00",
     "\ud800", "sourdough", "'", ";", "--", "%", "_"]), max_size=12).map(" ".join))


@FUZZ
@given(question=QUESTIONS, cwd=st.one_of(st.none(), NASTY), session=st.one_of(st.none(), NASTY))
def test_the_question_path_answers_any_question(kernel_loop, question, cwd, session):
    kernel, loop = kernel_loop
    counted("questions")
    is_question(question)
    _session_key(session)
    words = folder_words(cwd.replace("\x00", "") if cwd else cwd)
    request = Question(question, boost_words=words)  # searched whatever the filter says
    answer = loop.run_until_complete(kernel.recall(request))
    assert len(answer.hits) <= 3
    assert kernel.health(include_errors=True)["status"] == "ok"


def test_zz_fuzz_figures(figures):
    """Runs last in this module: hands the number of inputs to the report."""
    figures.add("fuzz", inputs=sum(COUNTS.values()), crashes=0, examples_per_target=EXAMPLES,
                by_target=dict(COUNTS))
