"""The worker processes of large keyword searches: they rank like the server and end with it."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

from passageway.builtin import keyword_workers


def test_a_worker_ranks_like_the_calling_thread(tmp_path):
    path = tmp_path / "words.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE VIRTUAL TABLE passage_words USING fts5(title, path, heading, text)")
    connection.executemany(
        "INSERT INTO passage_words (rowid, title, path, heading, text) VALUES (?, ?, '', '', ?)",
        [(n, f"note {n}", "mill " * (n % 4 + 1) + "river " * (n % 3)) for n in range(1, 60)],
    )
    connection.commit()
    pool = keyword_workers.Workers()
    sql = ("SELECT rowid, bm25(passage_words) FROM passage_words WHERE passage_words MATCH ? "
           "AND rowid BETWEEN ? AND ? ORDER BY 2 LIMIT 5")
    jobs = [('"mill" OR "river"', 10, 40), ('"river"', 1, 59), ('"absent"', 1, 59)]
    try:
        stat = os.stat(path)
        future = pool.submit(str(path), (stat.st_dev, stat.st_ino), sql, jobs)
        assert future is not None
        here = keyword_workers.read(connection, sql, jobs)
        assert future.result(timeout=60) == here
        assert [len(rows) for rows in here] == [5, 5, 0]
        assert all(10 <= key <= 40 for key, _ in here[0])
    finally:
        pool.shutdown()
        connection.close()


SERVER = textwrap.dedent("""
    import time
    from passageway.builtin.keyword_workers import Workers

    if __name__ == "__main__":
        pool = Workers()
        pool.start()
        pool._pool.submit(int).result()
        try:  # printing inside: the test sends Ctrl-C as soon as it reads the line
            print(" ".join(str(pid) for pid in pool._pool._processes), flush=True)
            time.sleep(120)
        except KeyboardInterrupt:
            pool.shutdown()
            print("stopped", flush=True)
""")


def start_server(tmp_path) -> tuple[subprocess.Popen[str], list[int]]:
    """A stand-in server with its worker processes running, in a process group of its own."""
    (tmp_path / "server.py").write_text(SERVER)
    server = subprocess.Popen([sys.executable, str(tmp_path / "server.py")], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)
    workers = [int(pid) for pid in server.stdout.readline().split()]
    assert workers and all(_alive(pid) for pid in workers)
    return server, workers


def test_workers_exit_when_the_server_is_killed(tmp_path):
    server, workers = start_server(tmp_path)
    server.send_signal(signal.SIGKILL)
    server.wait()  # not communicate(): workers that outlive it would keep its pipes open
    server.stdout.close()
    server.stderr.close()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers)


def test_ctrl_c_stops_the_server_without_a_traceback_from_its_workers(tmp_path):
    server, workers = start_server(tmp_path)
    os.killpg(server.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    out, err = server.communicate(timeout=30)
    assert out.strip() == "stopped", err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert not any(_alive(pid) for pid in workers)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[-1][0] != "Z"
    except FileNotFoundError:
        return False
