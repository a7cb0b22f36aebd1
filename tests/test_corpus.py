"""The sample corpus is exactly the published files, with its licence, and its questions fit it."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import pytest

from passageway.builtin.eval.cases import load_cases, normalise

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
MANIFEST = CORPUS / "MANIFEST.sha256"
# Files of ours that live beside the corpus but are not part of the published set.
NOT_IN_MANIFEST = {
    "MANIFEST.sha256", "near-topic.toml", "measure.sh", "compare.sh", "serve.sh", "chunk-sweep.sh",
    "common.sh", "long_prompts.py", "long-prompts.toml", "long-prompts.diff", "both_answers.py",
}


def manifest() -> dict[str, str]:
    entries = {}
    for line in MANIFEST.read_text(encoding="utf-8").splitlines():
        digest, name = line.split("  ", 1)
        assert len(digest) == 64 and name not in entries
        entries[name] = digest
    return entries


def test_every_file_matches_the_manifest():
    entries = manifest()
    assert len(entries) == 44  # 40 articles, LICENSE, README, the two question files
    for name, digest in entries.items():
        assert hashlib.sha256((CORPUS / name).read_bytes()).hexdigest() == digest, name


def test_no_unlisted_file_in_the_article_folders():
    entries = manifest()
    for folder in ("en", "de"):
        for path in (CORPUS / folder).iterdir():
            assert f"{folder}/{path.name}" in entries, f"{path} is not in MANIFEST.sha256"
    for path in CORPUS.iterdir():
        if path.is_file() and path.name not in NOT_IN_MANIFEST and not path.name.startswith("eval-"):
            assert path.name in entries, f"{path} is not in MANIFEST.sha256"


def test_licence_and_readme_are_there():
    licence = (CORPUS / "LICENSE.md").read_text(encoding="utf-8")
    assert "CC BY-SA 4.0" in licence and "Attribution-ShareAlike 4.0 International Public License" in licence
    assert "LICENSE.md" in (CORPUS / "README.md").read_text(encoding="utf-8")


def test_the_questions_fit_the_articles():
    cases = load_cases([CORPUS / "questions.toml"]).cases
    assert len(cases) == 100
    assert Counter(case.group for case in cases) == {"en": 35, "de": 35, "absent-en": 15, "absent-de": 15}
    for case in cases:
        if not case.answerable:
            assert case.group.startswith("absent-")
            continue
        assert case.expect and case.expect_text
        for name in case.expect:
            assert (CORPUS / "en" / name).is_file() and (CORPUS / "de" / name).is_file()
        # The answer text stands in the article of the question's language.
        text = normalise((CORPUS / case.group / case.expect[0]).read_text(encoding="utf-8"))
        assert any(normalise(answer) in text for answer in case.expect_text), case.query


@pytest.mark.parametrize("name", ["questions.toml", "questions-all.toml"])
def test_an_answer_text_stands_in_both_languages_articles(name):
    """corpus/both_answers.py: a German question answered by the English passage is answered."""
    articles = {
        (language, path.name): normalise(path.read_text(encoding="utf-8"))
        for language in ("en", "de") for path in (CORPUS / language).glob("*.md")
    }
    cases = [case for case in load_cases([CORPUS / name]).cases if case.answerable]
    in_both = [
        case for case in cases
        if all(any(normalise(answer) in articles[(language, case.expect[0])] for answer in case.expect_text)
               for language in ("en", "de"))
    ]
    assert len(in_both) >= 0.97 * len(cases)


@pytest.mark.skipif(not (CORPUS / "near-topic.toml").exists(), reason="near-topic questions not written yet")
def test_near_topic_questions_must_all_stay_silent():
    cases = load_cases([CORPUS / "near-topic.toml"]).cases
    assert cases and not any(case.answerable for case in cases)
    assert {case.group for case in cases} <= {"near-topic-en", "near-topic-de"}


def banner(port: int, password_file: Path) -> str:
    """What ``corpus/serve.sh`` prints before it starts the server (its here-document, expanded)."""
    import subprocess

    script = (CORPUS / "serve.sh").read_text(encoding="utf-8")
    start = script.index("cat >&2 <<EOT")
    document = script[start:script.index("\nEOT\n", start) + 5].replace("cat >&2", "cat")
    done = subprocess.run(["sh", "-c", document], capture_output=True, text=True, timeout=30, env={
        "DEMO": str(password_file.parent), "PORT": str(port), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_the_banner_names_what_health_answers_before_the_server_listens(tmp_path):
    """A newcomer pastes the banner's /health example at once: while the model loads the server
    already accepts connections and answers a state the banner must name (it said "curl cannot
    connect" until the log says "listening", which a pasted curl disproved)."""
    import asyncio
    import json
    import re
    import shutil
    import socket
    from types import SimpleNamespace

    from passageway.kernel.server import answer_starting

    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    text = banner(port, tmp_path / "password")
    found = re.search(r"health: +(curl \S+/health)\n", text)
    assert found, text
    runner = await answer_starting(SimpleNamespace(version="0", instance=None), listener)  # type: ignore[arg-type]
    try:
        process = await asyncio.create_subprocess_exec(
            "bash", "-c", found.group(1), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        output, _ = await asyncio.wait_for(process.communicate(), 60)
    finally:
        await runner.cleanup()
        listener.close()
    state = json.loads(output)["status"]
    assert state == "starting"
    assert f'/health answers "{state}"' in " ".join(text.split()), text


async def test_the_banners_recall_example_answers_every_time_it_is_pasted(tmp_path):
    """The /recall command the quickstart prints, pasted twice into a shell, gets passages twice."""
    import asyncio
    import json
    import re
    import shutil
    from urllib.parse import urlsplit

    from tests.server_helpers import PASSWORD, make_kernel, running_server, wait_built, write_instance

    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    password_file = tmp_path / "demo" / "password"
    password_file.parent.mkdir()
    password_file.write_text(PASSWORD + "\n")
    (tmp_path / "server").mkdir()
    kernel = make_kernel(write_instance(tmp_path / "server"))
    async with running_server(kernel) as url:
        await wait_built(kernel)
        text = banner(urlsplit(url).port or 0, password_file)
        found = re.search(r"recall: +(curl .*?/recall)\n", text, flags=re.DOTALL)
        assert found, text
        command = found.group(1)
        # The sample corpus's question, asked of this test's sources instead.
        question = "how does a refracting telescope gather starlight with a lens?"
        command = re.sub(r'"prompt": "[^"]*"', f'"prompt": "{question}"', command)
        answers = []
        for _ in range(2):
            process = await asyncio.create_subprocess_exec(
                "bash", "-c", command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            output, _ = await asyncio.wait_for(process.communicate(), 60)
            answers.append(json.loads(output)["context"])
    assert all("Refracting telescope" in answer for answer in answers), answers
    assert "session_id" in text  # the banner says what a session id would change


def test_the_demo_folder_is_readable_only_by_its_owner(tmp_path):
    # 38.7: serve.sh made .demo/ (the password, the index) 755.
    import stat
    import subprocess
    import sys

    script = (CORPUS / "serve.sh").read_text(encoding="utf-8")
    start = script.index('DEMO="$ROOT/.demo"')
    setup = script[start:script.index("\nfi\n", start) + 4]
    for existing in (False, True):
        root = tmp_path / str(existing)
        if existing:
            (root / ".demo").mkdir(parents=True, mode=0o755)
        done = subprocess.run(["sh", "-eu", "-c", setup], capture_output=True, text=True, timeout=30, env={
            "ROOT": str(root), "PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})
        assert done.returncode == 0, done.stderr
        assert stat.S_IMODE((root / ".demo").stat().st_mode) == 0o700
        assert stat.S_IMODE((root / ".demo" / "password").stat().st_mode) == 0o600
