#!/usr/bin/env python3
"""A toy embedder program: every word is hashed into one of 64 buckets.

It shows the whole embedder protocol loop in a few lines; put your model where embed() is.
Read one JSON request per line on stdin, write exactly one JSON reply per line on stdout.
"""
import hashlib
import json
import re
import sys

DIM = 64


def bucket(word):
    return int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big") % DIM


def embed(texts, kind):
    # kind is "query" or "passage"; this toy treats both alike, an e5 model would add a prefix.
    vectors = []
    for text in texts:
        counts = [0.0] * DIM
        for word in re.findall(r"\w+", text.lower()):
            counts[bucket(word)] += 1.0
        vectors.append(counts)
    return vectors


for line in sys.stdin:
    request = json.loads(line)
    try:
        if request["op"] == "info":
            reply = {"name": "toy-hash-64", "dim": DIM}
        else:
            reply = {"vectors": embed(request["texts"], request["kind"])}
    except Exception as error:  # report the failure and stay in use
        reply = {"error": str(error)}
    print(json.dumps(reply), flush=True)
