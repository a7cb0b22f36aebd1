"""`passageway eval` end to end: the fake connector as a real subprocess, toy embedders in-process.

Every option and exit code of the command is exercised here; the scoring itself is tested on
synthetic outcomes in test_eval_metrics.py.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from passageway import hookimpl
from passageway.kernel import plugins
from passageway.kernel.cli import main
from passageway.kernel.errors import EmbedderError
from passageway.testing.toy_embedder import ToyEmbedder
from passageway.testing.toy_embedder import plugin as toy_plugin

FIXTURES = Path(__file__).parent / "eval_fixtures"
START = "<!-- passageway:results:start -->"
END = "<!-- passageway:results:end -->"


class _Toy32:
    @hookimpl
    def passageway_register_embedders(self, register):
        def factory(settings, context):
            threshold = settings.min_similarity if settings.min_similarity is not None else 0.4
            return ToyEmbedder(dim=32, min_similarity=threshold)

        register("toy32", factory)


class _WordCounter(ToyEmbedder):
    """A model that counts a word a token and reads at most 12: a long question is cut at another
    place than the byte guess (three bytes a token) would cut it."""

    questions: ClassVar[list[str]] = []
    max_tokens = 12

    def count_tokens(self, text: str) -> int:
        return len(text.split()) + 2

    async def embed(self, texts, kind):
        if kind == "query":
            _WordCounter.questions.extend(texts)
        return await super().embed(texts, kind)


class _Words:
    @hookimpl
    def passageway_register_embedders(self, register):
        register("words", lambda settings, context: _WordCounter(name="toy-words"))


class _QuestionFails:
    """An embedder that embeds passages but fails on every question."""

    @hookimpl
    def passageway_register_embedders(self, register):
        class Failing(ToyEmbedder):
            async def embed(self, texts, kind):
                if kind == "query":
                    raise EmbedderError("the toy embedder fails on questions")
                return await super().embed(texts, kind)

        register("toyfail", lambda settings, context: Failing(name="toy-fail"))


@pytest.fixture(autouse=True)
def toy_plugins(monkeypatch, tmp_path):
    """The toy embedders as plugins of every manager the command builds; a home of its own."""
    original = plugins.build_plugin_manager

    def with_toys(env=None, **kwargs):
        return original(
            env,
            extra=(("toy", toy_plugin), ("toy32", _Toy32()), ("toyfail", _QuestionFails()),
                   ("words", _Words())),
            load_entry_points=False,
        )

    monkeypatch.setattr(plugins, "build_plugin_manager", with_toys)
    for name in (
        "PASSAGEWAY_CONFIG",
        "PASSAGEWAY_DATA_DIR",
        "PASSAGEWAY_MODEL_DIR",
        "PASSAGEWAY_INSTANCE",
        "PASSAGEWAY_RANKER",
        "APP_VERSION",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def write_config(tmp_path: Path, *, embedders: str = "", env: str = "", kind: str = "toy") -> Path:
    items = tmp_path / "items.json"
    shutil.copy(FIXTURES / "items.json", items)
    config = tmp_path / "passageway.toml"
    config.write_text(
        f'[embedder]\nkind = "{kind}"\nmin_similarity = 0.5\n\n'
        f'[[connector]]\nname = "notes"\n'
        f'command = ["{sys.executable}", "-m", "passageway.testing.fake_connector"]\n'
        f'env = {{ FAKE_ITEMS = "{items}"{env} }}\n\n{embedders}',
        encoding="utf-8",
    )
    return config


def run(capsys, *arguments) -> tuple[int, str, str]:
    code = main(["eval", *[str(argument) for argument in arguments]])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


CASES = FIXTURES / "cases.toml"


def test_a_run_prints_the_report_and_writes_it_without_quoting_sources(tmp_path, capsys):
    config = write_config(tmp_path)
    out = tmp_path / "out"
    code, stdout, stderr = run(capsys, CASES, "--config", config, "--out", out)
    assert code == 0, stderr
    assert "eval: building the index of notes" in stderr and "index ready" in stderr
    assert "| Hit@3" in stdout and "ranker hybrid" in stdout
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert (out / "report.md").read_text(encoding="utf-8") == stdout
    assert report["kind"] == "run"
    assert report["embedder"] == {"name": "toy-hash-64", "dim": 64}
    assert report["threshold"] == 0.5
    assert report["questions"] == {"total": 5, "answerable": 3, "unanswerable": 2, "with_answer_text": 3}
    assert report["index"]["sources"] == [{"name": "notes", "items": 3, "passages": 6, "error": None}]
    assert [group["group"] for group in report["groups"]] == ["garden", "bikes", "bread", "absent"]
    assert set(report["intervals"]) >= {"hit_at_1", "hit_at_3", "silence", "false_silence"}
    assert "Python" in report["machine"]
    text = json.dumps(report) + stdout
    for private in ("tomatoes get watering", "Growing tomatoes", "notes.example", "quantum"):
        assert private not in text
    assert "cases" not in report


def test_include_cases_quotes_questions_and_what_was_found(tmp_path, capsys):
    config = write_config(tmp_path)
    code, stdout, _ = run(capsys, CASES, "--config", config, "--out", tmp_path / "out", "--include-cases")
    assert code == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    chain = next(case for case in report["cases"] if case["query"].startswith("when to replace"))
    assert chain["rank"] == 1
    assert chain["found"][0]["title"] == "Bicycle chain care"
    assert "when to replace the bicycle chain wear" in stdout


def test_expect_text_counts_an_answer_only_when_the_passage_holds_it(tmp_path, capsys):
    config = write_config(tmp_path)
    code, _, _ = run(capsys, CASES, "--config", config, "--out", tmp_path / "out", "--threshold", "0.2")
    assert code == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    # All three articles are found at 0.2; the sourdough case's answer text is not in its article.
    assert report["counts"]["hit_at_3"] == [3, 3]
    assert report["counts"]["answer_at_3"] == [2, 3]
    assert report["threshold"] == 0.2


def test_sweep_builds_once_and_reports_every_threshold(tmp_path, capsys):
    config = write_config(tmp_path)
    code, stdout, stderr = run(
        capsys, CASES, "--config", config, "--sweep", "0.9,0.2,0.5", "--out", tmp_path / "o"
    )
    assert code == 0
    assert stderr.count("index ready") == 1
    report = json.loads((tmp_path / "o" / "report.json").read_text(encoding="utf-8"))
    assert [row["threshold"] for row in report["sweep"]] == [0.2, 0.5, 0.9]
    low, high = report["sweep"][0], report["sweep"][2]
    assert low["metrics"]["hit_at_3"] >= high["metrics"]["hit_at_3"]
    assert low["metrics"]["silence"] <= high["metrics"]["silence"]
    assert report["sweep_choice"] in (0.2, 0.5, 0.9)
    assert "### Relevance threshold" in stdout and "On this sweep it gives" in stdout


def test_enforce_below_and_above_the_targets(tmp_path, capsys):
    config = write_config(tmp_path)
    strict = tmp_path / "strict.toml"
    strict.write_text(
        CASES.read_text(encoding="utf-8").replace("hit_at_3 = 0.5", "hit_at_3 = 1.0"), encoding="utf-8"
    )
    code, stdout, stderr = run(capsys, strict, "--config", config, "--threshold", "0.9", "--enforce")
    assert code == 1 and "below the targets: hit_at_3" in stderr and "NOT MET" in stdout
    code, _, stderr = run(capsys, CASES, "--config", config, "--threshold", "0.5", "--enforce")
    assert code == 0, stderr


def test_enforce_without_targets_warns_and_passes(tmp_path, capsys):
    config = write_config(tmp_path)
    plain = tmp_path / "plain.toml"
    plain.write_text('[[case]]\nquery = "sourdough starter"\nexpect = ["sourdough"]\n', encoding="utf-8")
    code, _, stderr = run(capsys, plain, "--config", config, "--enforce")
    assert code == 0 and "has no [targets]" in stderr


def test_a_metric_without_questions_is_na_and_fails_its_target(tmp_path, capsys):
    config = write_config(tmp_path)
    answerable_only = tmp_path / "only.toml"
    answerable_only.write_text(
        '[targets]\nsilence = 0.0\n[[case]]\nquery = "sourdough starter"\nexpect = ["sourdough"]\n',
        encoding="utf-8",
    )
    code, stdout, stderr = run(
        capsys, answerable_only, "--config", config, "--enforce", "--out", tmp_path / "o"
    )
    assert code == 1 and "silence" in stderr
    assert re.search(r"\| Silence on unanswerable questions +\| n/a +\|", stdout)
    report = json.loads((tmp_path / "o" / "report.json").read_text(encoding="utf-8"))
    assert report["metrics"]["silence"] is None and report["intervals"]["silence"] is None
    assert report["targets"]["silence"] == {"target": 0.0, "value": None, "met": False, "at_least": True}


def test_a_typo_in_the_cases_file_is_exit_2_naming_the_key(tmp_path, capsys):
    config = write_config(tmp_path)
    typo = tmp_path / "typo.toml"
    typo.write_text('[[case]]\nquery = "sourdough"\nexpcet = ["sourdough"]\n', encoding="utf-8")
    code, _, stderr = run(capsys, typo, "--config", config)
    assert code == 2 and "'expcet'" in stderr and "building" not in stderr


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--ranker", "nope"], "no ranker named 'nope'"),
        (["--block", "x"], "--block names a block"),
        (["--embedder", "x"], "option of eval compare"),
        (["--group", "nope"], "no case has that group"),
    ],
)
def test_bad_options_are_exit_2(tmp_path, capsys, arguments, message):
    config = write_config(tmp_path)
    code, _, stderr = run(capsys, CASES, "--config", config, *arguments)
    assert code == 2 and message in stderr


@pytest.mark.parametrize(
    "arguments", [["--sweep", "0.5,high"], ["--threshold", "1.5"], ["--threshold", "0.1,0.2"]]
)
def test_malformed_numbers_are_exit_2(tmp_path, capsys, arguments):
    config = write_config(tmp_path)
    with pytest.raises(SystemExit) as caught:
        main(["eval", str(CASES), "--config", str(config), *arguments])
    assert caught.value.code == 2


def test_a_bad_or_missing_configuration_is_exit_2(tmp_path, capsys):
    code, _, stderr = run(capsys, CASES, "--config", tmp_path / "missing.toml")
    assert code == 2 and "no configuration" in stderr
    empty = tmp_path / "empty.toml"
    empty.write_text("", encoding="utf-8")
    code, _, stderr = run(capsys, CASES, "--config", empty)
    assert code == 2 and "no [[connector]]" in stderr


def test_a_source_that_fails_to_sync_is_exit_1(tmp_path, capsys):
    config = write_config(tmp_path, env=', FAKE_FAIL = "list,check,fetch"')
    code, stdout, stderr = run(capsys, CASES, "--config", config)
    assert code == 1 and "failed to sync" in stderr and stdout == ""


def test_group_filter_keeps_only_those_cases(tmp_path, capsys):
    config = write_config(tmp_path)
    code, _, _ = run(capsys, CASES, "--config", config, "--group", "bikes,absent", "--out", tmp_path / "o")
    assert code == 0
    report = json.loads((tmp_path / "o" / "report.json").read_text(encoding="utf-8"))
    assert [group["group"] for group in report["groups"]] == ["bikes", "absent"]


def test_write_updates_the_block_keeps_crlf_and_the_history(tmp_path, capsys):
    config = write_config(tmp_path)
    page = tmp_path / "docs" / "measurements.md"
    page.parent.mkdir()
    page.write_bytes(
        f"# Page\r\n\r\n```\r\n{START}\r\n{END}\r\n```\r\n\r\n"
        f"{START}\r\nold\r\n{END}\r\n\r\nNotes.\r\n".encode()
    )
    for _ in range(2):
        code, _, stderr = run(capsys, CASES, "--config", config, "--write", page)
        assert code == 0, stderr
    raw = page.read_bytes()
    assert b"\n" not in raw.replace(b"\r\n", b"")
    text = raw.decode().replace("\r\n", "\n")
    assert f"```\n{START}\n{END}\n```" in text and "\nold\n" not in text
    assert "### History" in text and "toy-hash-64" in text and text.endswith("Notes.\n")
    history = json.loads((tmp_path / "docs" / "measurements.history.json").read_text(encoding="utf-8"))
    assert len(history["runs"]) == 1  # the same date, model, threshold and version: replaced
    code, _, _ = run(capsys, CASES, "--config", config, "--write", page, "--threshold", "0.3")
    history = json.loads((tmp_path / "docs" / "measurements.history.json").read_text(encoding="utf-8"))
    assert [run["threshold"] for run in history["runs"]] == [0.5, 0.3]


def test_write_checks_the_page_before_the_run(tmp_path, capsys):
    config = write_config(tmp_path)
    page = tmp_path / "page.md"
    page.write_text(f"```\n{START}\n{END}\n```\n", encoding="utf-8")
    code, _, stderr = run(capsys, CASES, "--config", config, "--write", page)
    assert code == 2 and "passageway:results:start" in stderr and "building" not in stderr


def test_data_dir_is_reused_and_refused_for_another_embedder(tmp_path, capsys):
    config = write_config(tmp_path)
    data = tmp_path / "index"
    code, _, stderr = run(capsys, CASES, "--config", config, "--data-dir", data, "--out", tmp_path / "a")
    assert code == 0, stderr
    assert (data / "notes.db").exists()
    code, stdout, _ = run(capsys, CASES, "--config", config, "--data-dir", data, "--out", tmp_path / "b")
    assert code == 0 and "index reused from --data-dir" in stdout
    first = json.loads((tmp_path / "a" / "report.json").read_text(encoding="utf-8"))
    second = json.loads((tmp_path / "b" / "report.json").read_text(encoding="utf-8"))
    assert first["counts"] == second["counts"] and second["index"]["reused"] is True
    (tmp_path / "other").mkdir()
    other = write_config(tmp_path / "other", kind="toy32")
    code, _, stderr = run(capsys, CASES, "--config", other, "--data-dir", data)
    assert code == 2 and "was built with the embedder 'toy-hash-64'" in stderr


def test_compare_embedders_each_with_its_own_index_and_gate(tmp_path, capsys):
    config = write_config(tmp_path, embedders='[embedders.small]\nkind = "toy32"\n')
    out = tmp_path / "out"
    page = tmp_path / "models.md"
    page.write_text(f"# Models\n\n{START}\n{END}\n", encoding="utf-8")
    code, stdout, stderr = run(
        capsys, "compare", CASES, "--config", config, "--out", out, "--write", page, "--sweep", "0.3,0.6"
    )
    assert code == 0, stderr
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["kind"] == "compare" and report["axis"] == "embedder"
    entries = report["entries"]
    assert [(entry["label"], entry["embedder"]["dim"], entry["threshold"]) for entry in entries] == [
        ("default", 64, 0.5),
        ("small", 32, 0.4),
    ]
    assert stderr.count("index ready") == 2
    assert "default: toy-hash-64" in stdout and "small: toy-hash-32" in stdout
    assert "### Relevance threshold: small" in stdout
    history = json.loads((tmp_path / "models.history.json").read_text(encoding="utf-8"))
    assert [run["label"] for run in history["runs"]] == ["default", "small"]
    code, _, _ = run(capsys, "compare", CASES, "--config", config, "--threshold", "0.45", "--out", out)
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert [entry["threshold"] for entry in report["entries"]] == [0.45, 0.45]


def test_compare_rankers_on_one_index(tmp_path, capsys):
    config = write_config(tmp_path)
    out = tmp_path / "out"
    code, stdout, stderr = run(
        capsys, "compare", CASES, "--config", config, "--rankers", "hybrid,keyword,vector", "--out", out
    )
    assert code == 0, stderr
    assert stderr.count("index ready") == 1
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["axis"] == "ranker"
    assert [entry["ranker"] for entry in report["entries"]] == ["hybrid", "keyword", "vector"]
    assert "Every ranker answered from the same index." in stdout


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ([], "at least two embedders"),
        (["--embedder", "default", "--embedder", "nope"], "--embedder nope"),
        (["--enforce"], "option of a single run"),
        (["--rankers", "hybrid,nope"], "no ranker named 'nope'"),
    ],
)
def test_compare_refuses_bad_input_with_exit_2(tmp_path, capsys, arguments, message):
    config = write_config(tmp_path)
    code, _, stderr = run(capsys, "compare", CASES, "--config", config, *arguments)
    assert code == 2 and message in stderr


def test_compare_with_an_embedder_that_cannot_start_is_exit_2(tmp_path, capsys):
    config = write_config(
        tmp_path, embedders='[embedders.broken]\nkind = "command"\ncommand = ["/nonexistent/embedder"]\n'
    )
    code, _, stderr = run(capsys, "compare", CASES, "--config", config)
    assert code == 2 and "embedder 'broken'" in stderr and "building" not in stderr


def test_a_second_eval_reuses_the_vector_cache_and_embeds_only_questions(tmp_path, capsys):
    config = write_config(tmp_path)
    code, _, stderr = run(capsys, CASES, "--config", config, "--out", tmp_path / "a")
    assert code == 0 and "6 passages embedded" in stderr
    code, _, stderr = run(capsys, CASES, "--config", config, "--out", tmp_path / "b")
    assert code == 0 and "0 passages embedded" in stderr
    assert list((tmp_path / "home").rglob("vectors/*.db")), "the cache lives in the shared data folder"
    first = json.loads((tmp_path / "a" / "report.json").read_text(encoding="utf-8"))
    second = json.loads((tmp_path / "b" / "report.json").read_text(encoding="utf-8"))
    assert (first["index"]["embedded"], second["index"]["embedded"]) == (6, 0)
    assert first["counts"] == second["counts"]


async def test_metered_embedder_embeds_a_question_once_and_counts_its_first_time():
    from passageway.builtin.eval.engine import MeteredEmbedder

    inner = ToyEmbedder()
    metered = MeteredEmbedder(inner)
    first = await metered.embed(["a question"], "query")
    again = await metered.embed(["a question"], "query")
    await metered.embed(["one passage", "another"], "passage")
    assert (first == again).all()
    assert inner.texts_embedded == 3 and metered.passages_embedded == 2
    assert metered.embed_seconds_counted == pytest.approx(2 * metered.embed_seconds_real)


def test_metered_embedder_gates_with_the_wrapped_models_offset():
    from passageway.builtin.eval.engine import MeteredEmbedder
    from passageway.kernel.ranking import Gate

    metered = MeteredEmbedder(ToyEmbedder(min_similarity=0.87, cross_language_offset=0.06))
    assert Gate.of(metered) == Gate(0.87, 0.06)
    assert Gate.of(metered, 0.8) == Gate(0.8, 0.06)  # --threshold replaces the cosine bar only

    class WithoutOffset:
        name, dim, min_similarity = "plain", 8, 0.5

    assert Gate.of(MeteredEmbedder(WithoutOffset())) == Gate(0.5, 0.0)


def test_an_embedder_failing_on_the_questions_is_exit_1(tmp_path, capsys):
    config = write_config(tmp_path, kind="toyfail")
    code, stdout, stderr = run(capsys, CASES, "--config", config)
    assert code == 1 and "failed on a question" in stderr and stdout == ""


def test_model_dir_and_instance_are_accepted(tmp_path, capsys, monkeypatch):
    config = write_config(tmp_path)
    code, _, stderr = run(capsys, CASES, "--config", config, "--model-dir", tmp_path / "models")
    assert code == 0, stderr
    code, _, stderr = run(capsys, CASES, "--config", config, "--instance", "nope")
    assert code == 2 and "there is no instance 'nope'" in stderr



def test_chunk_cap_changes_how_the_index_is_cut(tmp_path, capsys):
    config = write_config(tmp_path)
    paragraphs = "\n\n".join(f"Paragraph {n} about watering tomatoes in a long dry summer." for n in range(6))
    items = [{"id": "long", "title": "Long note", "url": "", "version": "1",
              "sections": [{"heading": None, "text": paragraphs}]}]
    (tmp_path / "items.json").write_text(json.dumps(items), encoding="utf-8")
    passages = {}
    for cap in ("1500", "100"):
        out = tmp_path / f"out-{cap}"
        code, _stdout, stderr = run(capsys, CASES, "--config", config, "--out", out, "--chunk-cap", cap)
        assert code == 0, stderr
        report = json.loads((out / "report.json").read_text(encoding="utf-8"))
        passages[cap] = report["index"]["sources"][0]["passages"]
    assert passages == {"1500": 1, "100": 6}


def test_chunk_cap_is_refused_with_data_dir(tmp_path, capsys):
    cases = tmp_path / "cases.toml"
    cases.write_text('[[case]]\nquery = "a question"\n')
    code, _stdout, stderr = run(capsys, cases, "--chunk-cap", "600", "--data-dir", tmp_path / "d")
    assert code == 2
    assert "--chunk-cap builds a fresh index" in stderr


def test_chunk_cap_must_be_a_sensible_number(capsys):
    with pytest.raises(SystemExit):
        main(["eval", "cases.toml", "--chunk-cap", "12"])
    assert "from 100 to 100000" in capsys.readouterr().err


def test_json_prints_the_report_json_instead_of_markdown(tmp_path, capsys):
    config = write_config(tmp_path)
    out = tmp_path / "out"
    code, stdout, stderr = run(capsys, CASES, "--config", config, "--out", out, "--json")
    assert code == 0, stderr
    assert json.loads(stdout) == json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert "\r" not in stderr  # stderr is no terminal: no progress bar


LONG_QUESTION = ("how often should tomatoes in a small garden bed on a sunny balcony get watering during "
                 "a long hot summer week")


async def test_eval_and_the_server_cut_a_long_question_identically(tmp_path, capsys):
    """Eval meters the embedder, and the meter forwards the model's token count and input limit:
    the question eval embeds is the one the server embeds."""
    from passageway.kernel.app import Kernel
    from passageway.kernel.config import load_settings

    config = write_config(tmp_path, kind="words")
    cases = tmp_path / "long.toml"
    cases.write_text(f'[[case]]\nquery = "{LONG_QUESTION}"\nexpect_id = ["garden/tomatoes"]\n',
                     encoding="utf-8")
    _WordCounter.questions.clear()
    code, _, stderr = await asyncio.to_thread(run, capsys, cases, "--config", config)
    assert code == 0, stderr
    eval_cut = _WordCounter.questions[-1]

    _WordCounter.questions.clear()
    environ = {"HOME": str(tmp_path / "home"), "PASSAGEWAY_CONFIG": str(config),
               "PASSAGEWAY_DATA_DIR": str(tmp_path / "data"), "PASSAGEWAY_LOGIN_PASSWORD": "x" * 16}
    async with Kernel.open(load_settings(environ), plugins.build_plugin_manager(environ), environ) as kernel:
        await kernel.recall(LONG_QUESTION)
    server_cut = _WordCounter.questions[-1]

    assert eval_cut == server_cut == " ".join(LONG_QUESTION.split()[:10])
    # Before, the meter hid max_tokens and count_tokens: eval embedded the whole question.
    assert eval_cut != LONG_QUESTION


def test_the_summary_counts_passages_not_excerpt_windows(tmp_path, capsys):
    config = write_config(tmp_path)
    long_text = " ".join(f"Sentence {n} says how the gardener waters the {n}th row of tomatoes."
                         for n in range(40))
    items = json.loads((tmp_path / "items.json").read_text(encoding="utf-8"))
    items[0]["sections"][0]["text"] = long_text  # a passage long enough to have excerpt windows
    (tmp_path / "items.json").write_text(json.dumps(items), encoding="utf-8")
    code, _, stderr = run(capsys, CASES, "--config", config, "--out", tmp_path / "a")
    assert code == 0, stderr
    report = json.loads((tmp_path / "a" / "report.json").read_text(encoding="utf-8"))
    passages = sum(source["passages"] for source in report["index"]["sources"])
    [summary] = [line for line in stderr.splitlines() if "index ready" in line]
    assert f"({passages} passages and " in summary and " excerpt windows embedded" in summary, summary
    assert report["index"]["embedded"] == passages


def test_the_progress_line_has_totals_and_the_time_left():
    import logging

    from passageway.builtin.eval.engine import progress_line
    from passageway.kernel.index.sync_health import BuildProgress, SourceHealth

    health = SourceHealth(source="notes", state="indexing")
    seconds = [0.0]
    progress = BuildProgress(health, 100, 60.0, logging.getLogger("test"), lambda: seconds[0])
    progress.chunked_items(40, ["a passage " * 20] * 120, ["a passage " * 20] * 120, ["a window"] * 200)
    progress.embedding()
    seconds[0] = 10.0
    progress.embedded(["a passage " * 20] * 60)
    line = progress_line({"notes": health.public()})
    assert line.startswith("notes: 40/100 items, 60 of 300 passages, 0 of 500 excerpt windows, about ")
    assert line.endswith(" left")
