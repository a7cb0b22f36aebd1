#!/usr/bin/env python3
"""An embedder program that misbehaves on purpose, for tests of the command embedder.

MODE picks the misbehaviour; STATE names a file that counts starts, so a mode can act
differently after a restart. SECRET_TOKEN, when set, is written to stderr so that tests can
check it is masked.
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

MODE = os.environ.get("MODE", "ok")
STATE = Path(os.environ["STATE"]) if os.environ.get("STATE") else None
DIM = 8

starts = 1
if STATE is not None:
    starts = int(STATE.read_text()) + 1 if STATE.exists() else 1
    STATE.write_text(str(starts))


def vector(text):
    values = [0.0] * DIM
    for word in text.lower().split():
        values[sum(map(ord, word)) % DIM] += 1.0
    values[0] += 0.01  # never all zero
    return values


def log(message):
    secret = os.environ.get("SECRET_TOKEN", "")
    print(f"{message} (token {secret})" if secret else message, file=sys.stderr, flush=True)


def reply(value):
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


log(f"start {starts} in mode {MODE}; environment keys: {','.join(sorted(os.environ))}")
if MODE == "daemon_holds_stdout" and starts == 1:
    # A daemon (a double fork: nothing kills it with the program) that keeps the program's
    # stdout open, so the pipe never reports its end.
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            quiet = os.open(os.devnull, os.O_RDWR)
            os.dup2(quiet, 0)
            os.dup2(quiet, 2)
            Path(os.environ["CHILD_PID_FILE"]).write_text(str(os.getpid()))
            time.sleep(60)
        os._exit(0)
    os.wait()
for line in sys.stdin:
    request = json.loads(line)
    if request["op"] == "info":
        name = "fixture-8"
        if MODE == "rename" and starts > 1:
            name = "fixture-8-renamed"
        reply({"name": name, "dim": DIM})
        continue
    texts = request["texts"]
    if MODE == "die_first" and starts == 1:
        log("dying on the first embed")
        sys.exit(3)
    if MODE in ("die_always", "rename"):
        log("dying while answering")
        sys.exit(4)
    if MODE == "hang":
        # A grandchild in the same process group: a timeout must kill it too.
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        Path(os.environ["CHILD_PID_FILE"]).write_text(str(child.pid))
        time.sleep(600)
    if MODE == "stray":
        print("loading weights...", flush=True)
        continue
    if MODE in ("wrong_shape", "daemon_holds_stdout"):
        reply({"vectors": [[1.0, 2.0]] * len(texts)})
        continue
    if MODE == "bad_json_shape":
        reply({"embeddings": [vector(text) for text in texts]})
        continue
    if MODE == "zero":
        reply({"vectors": [[0.0] * DIM for _ in texts]})
        continue
    if MODE == "error":
        reply({"error": f"the backend refused the token {os.environ.get('SECRET_TOKEN', '')}"})
        continue
    if MODE == "count_requests":
        log(f"request with {len(texts)} texts")
    reply({"vectors": [vector(text) for text in texts]})
