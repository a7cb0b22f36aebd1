"""The command embedder against real subprocess programs that behave and misbehave."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from passageway.builtin.embedders.embed_command import CommandEmbedder
from passageway.kernel.errors import EmbedderError
from passageway.testing.blocking import BlockingEmbedder
from passageway.testing.embedder_contract import check_embedder, check_embedder_async

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "docs" / "examples" / "toy_hash_embedder.py"
FIXTURE = Path(__file__).resolve().parent / "embedder_fixtures" / "misbehaving_embedder.py"
SECRET = "s3cr3t-value-123"


def fixture(mode: str, tmp_path: Path, **kwargs) -> BlockingEmbedder:
    env = {"MODE": mode, "STATE": str(tmp_path / "starts"), "CHILD_PID_FILE": str(tmp_path / "child.pid")}
    return BlockingEmbedder(CommandEmbedder(
        "fixture",
        [sys.executable, str(FIXTURE)],
        env=env,
        secrets={"SECRET_TOKEN": SECRET},
        **kwargs,
    ))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); read its state.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_the_guides_toy_embedder_passes_the_contract_synchronously():
    embedder = BlockingEmbedder(CommandEmbedder("toy", [sys.executable, str(TOY)]))
    try:
        check_embedder(embedder)
        assert (embedder.name, embedder.dim) == ("toy-hash-64", 64)
    finally:
        embedder.close()
    assert embedder.embedder.pid is None


def test_the_contract_refuses_an_impossible_cross_language_offset():
    from passageway.testing.toy_embedder import ToyEmbedder

    with pytest.raises(AssertionError, match="cross_language_offset"):
        check_embedder(ToyEmbedder(cross_language_offset=-0.2))
    check_embedder(ToyEmbedder())  # the same embedder without the bad value passes


async def test_the_same_class_works_inside_an_event_loop():
    embedder = CommandEmbedder("toy", [sys.executable, str(TOY)], batch_size=2)
    try:
        await check_embedder_async(embedder)
        texts = [f"text number {index} about lighthouses" for index in range(5)]
        together = await embedder.embed(texts, "passage")
        one_by_one = np.concatenate([await embedder.embed([text], "passage") for text in texts])
        assert together.shape == (5, 64)
        np.testing.assert_allclose(together, one_by_one, atol=1e-6)
        assert np.allclose(np.linalg.norm(together, axis=1), 1.0)
        assert embedder.starts == 1
    finally:
        await embedder.close()


def test_the_program_sees_only_path_home_protocol_env_and_secrets(tmp_path, caplog):
    caplog.set_level("INFO", logger="passageway.embedder")
    embedder = BlockingEmbedder(CommandEmbedder(
        "fixture",
        [sys.executable, str(FIXTURE)],
        env={"MODE": "ok"},
        secrets={"SECRET_TOKEN": SECRET},
        environ={"PATH": os.environ["PATH"], "HOME": "/tmp", "SERVER_ONLY": "x"},
    ))
    try:
        embedder.start()
        embedder.embed(["a"], "query")
    finally:
        embedder.close()
    logged = caplog.text
    assert "environment keys:" in logged
    keys = logged.split("environment keys: ")[1].split(" ")[0].split(",")
    # Python may add LC_CTYPE on its own; nothing of the server's environment gets through.
    assert {"HOME", "MODE", "PASSAGEWAY_PROTOCOL", "PATH", "SECRET_TOKEN"} <= set(keys)
    assert "SERVER_ONLY" not in keys
    assert SECRET not in logged and "***" in logged


def test_splits_requests_into_batches_and_keeps_the_order(tmp_path, caplog):
    caplog.set_level("INFO", logger="passageway.embedder")
    embedder = fixture("count_requests", tmp_path, batch_size=3)
    try:
        texts = [f"word{index}" for index in range(7)]
        vectors = embedder.embed(texts, "passage")
        alone = np.concatenate([embedder.embed([text], "passage") for text in texts])
    finally:
        embedder.close()
    np.testing.assert_allclose(vectors, alone, atol=1e-6)
    sizes = [
        line.split("request with ")[1].split(" ")[0] for line in caplog.messages if "request with" in line
    ]
    assert sizes[:3] == ["3", "3", "1"]


def test_a_program_that_dies_on_the_first_embed_is_restarted_once(tmp_path):
    embedder = fixture("die_first", tmp_path)
    try:
        vectors = embedder.embed(["lighthouse"], "passage")
        assert vectors.shape == (1, 8)
        assert embedder.embedder.starts == 2
    finally:
        embedder.close()


def test_a_program_that_always_dies_fails_with_its_masked_stderr(tmp_path):
    embedder = fixture("die_always", tmp_path)
    try:
        with pytest.raises(EmbedderError) as caught:
            embedder.embed(["lighthouse"], "passage")
    finally:
        embedder.close()
    message = str(caught.value)
    assert "died" in message and "dying while answering" in message
    assert SECRET not in message and "***" in message
    assert embedder.embedder.starts == 2  # started, restarted once, then gave up


def test_a_hanging_request_kills_the_process_group_and_the_next_call_restarts(tmp_path):
    embedder = fixture("hang", tmp_path, timeout=1.5)
    try:
        embedder.start()
        program = embedder.embedder.pid
        started = time.monotonic()
        with pytest.raises(EmbedderError, match=r"within 1.5 seconds"):
            embedder.embed(["lighthouse"], "passage")
        assert time.monotonic() - started < 60  # about 1.5 s; the program hangs for good
        grandchild = int((tmp_path / "child.pid").read_text())
        deadline = time.monotonic() + 30
        while (alive(grandchild) or alive(program)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(program)
        assert not alive(grandchild), "the timeout must kill the whole process group"
        embedder.start()
        assert embedder.embedder.pid not in (None, program)
    finally:
        embedder.close()


def test_a_stray_stdout_line_stops_the_program(tmp_path):
    embedder = fixture("stray", tmp_path)
    try:
        embedder.start()
        first = embedder.embedder.pid
        with pytest.raises(EmbedderError, match="not a JSON reply"):
            embedder.embed(["lighthouse"], "passage")
        assert embedder.embedder.pid is None
        assert not alive(first)
    finally:
        embedder.close()


@pytest.mark.parametrize("mode", ["wrong_shape", "bad_json_shape"])
def test_a_reply_of_the_wrong_shape_stops_the_program(tmp_path, mode):
    embedder = fixture(mode, tmp_path)
    try:
        embedder.start()
        first = embedder.embedder.pid
        with pytest.raises(EmbedderError, match=r"wrong shape|vectors of length"):
            embedder.embed(["lighthouse", "banana"], "passage")
        assert embedder.embedder.pid is None and not alive(first)
        # The next call starts it again (and it misbehaves again).
        with pytest.raises(EmbedderError):
            embedder.embed(["lighthouse"], "passage")
        assert embedder.embedder.starts == 2
    finally:
        embedder.close()


def test_a_new_name_after_a_restart_is_refused(tmp_path):
    embedder = fixture("rename", tmp_path)
    try:
        embedder.start()
        assert embedder.name == "fixture-8"
        with pytest.raises(EmbedderError, match=r"fixture-8-renamed.*cannot mix models"):
            embedder.embed(["lighthouse"], "passage")
        assert embedder.name == "fixture-8"
    finally:
        embedder.close()


def test_zero_vectors_are_an_error(tmp_path):
    embedder = fixture("zero", tmp_path)
    try:
        with pytest.raises(EmbedderError, match="zero length"):
            embedder.embed(["lighthouse"], "passage")
    finally:
        embedder.close()


def test_an_error_reply_becomes_a_masked_error_and_the_program_stays(tmp_path):
    embedder = fixture("error", tmp_path)
    try:
        embedder.start()
        pid = embedder.embedder.pid
        with pytest.raises(EmbedderError, match="the backend refused the token") as caught:
            embedder.embed(["lighthouse"], "passage")
        assert SECRET not in str(caught.value) and "***" in str(caught.value)
        assert embedder.embedder.pid == pid
    finally:
        embedder.close()


def test_a_program_that_cannot_start_names_the_command(tmp_path):
    embedder = BlockingEmbedder(CommandEmbedder("broken", [str(tmp_path / "no-such-program")]))
    with pytest.raises(EmbedderError, match=r"cannot start .*no-such-program"):
        embedder.start()
    embedder.close()


def test_the_cross_language_offset_is_none_unless_given_and_checked():
    # Built without starting the program: the gate is known before the model is.
    assert CommandEmbedder("toy", [sys.executable, str(TOY)]).cross_language_offset == 0.0
    given = CommandEmbedder("toy", [sys.executable, str(TOY)], cross_language_offset=0.05)
    assert given.cross_language_offset == 0.05
    with pytest.raises(EmbedderError, match=r"embedder 'toy': cross_language_offset is from 0 to 1, got 1.5"):
        CommandEmbedder("toy", [sys.executable, str(TOY)], cross_language_offset=1.5)


def test_a_stopped_program_leaves_no_transport_open(tmp_path):
    # A transport still open is closed when garbage-collected, by then on the sync caller's
    # closed private loop: "Event loop is closed" (seen once under load in CI, when the end of
    # the program's output came after the call). Here its daemon holds that output open.
    embedder = fixture("daemon_holds_stdout", tmp_path)
    try:
        embedder.start()
        process = embedder.embedder._program.process
        with pytest.raises(EmbedderError, match="vectors of length"):
            embedder.embed(["lighthouse", "banana"], "passage")
        assert process._transport.is_closing() and process.returncode is not None
        embedder.start()
        process = embedder.embedder._program.process
    finally:
        embedder.close()
        daemon, deadline = tmp_path / "child.pid", time.monotonic() + 30
        while not daemon.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(int(daemon.read_text()), signal.SIGKILL)
    assert process._transport.is_closing()
