"""Prompts that took the reducer quadratic time, against a real server (issue 38, item 3).

A question and one pasted line of 20,000 characters (the hook's cap) of the worst shapes: a letter
and underscores, dots or dashes, a dotted path, a snake_case name, a run of short sentences. Each
``/recall`` must be answered, and meanwhile ``/health``, probed from another thread all along,
must keep answering: the reduction is linear and runs off the event loop.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request

from tests.reliability.conftest import AUTH, scale

CHARS = 19_900
SHAPES = {
    "underscores": "a" + "_" * CHARS,
    "dots": "a" + "." * CHARS,
    "dashes": "a" + "-" * CHARS,
    "dotted path": "a." * (CHARS // 2),
    "snake_case": "a_" * (CHARS // 2),
    "short sentences": "A. " * (CHARS // 3),
}
ANSWER_SECONDS = 10.0
"""How long a request may take before it counts as unanswered: before the fix the first shape held
the server 12-40 s; after it a recall takes well under a second on a busy machine."""


def timed(url: str, body: bytes | None = None) -> tuple[float, int]:
    headers = {**AUTH, "Content-Type": "application/json"} if body is not None else {}
    request = urllib.request.Request(url, data=body, headers=headers)
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=ANSWER_SECONDS) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        status = error.code
    except OSError:
        status = 0
    return time.perf_counter() - started, status


def test_no_prompt_holds_the_server(server_factory, figures):
    server = server_factory()
    server.start()
    server.wait_until(lambda report: report["status"] == "ok")
    shapes = list(SHAPES) if scale(False, True) else ["underscores", "dotted path", "short sentences"]
    stop = threading.Event()
    health: list[tuple[float, int]] = []

    def probe_health() -> None:
        while not stop.is_set():
            health.append(timed(f"{server.url}/health"))
            time.sleep(0.05)

    prober = threading.Thread(target=probe_health)
    prober.start()
    recalls: dict[str, tuple[float, int]] = {}
    try:
        for shape in shapes:
            for _ in range(scale(1, 10)):
                prompt = f"How do rivers flow into the sea?\n{SHAPES[shape]}"
                seconds, status = timed(f"{server.url}/recall", json.dumps({"prompt": prompt}).encode())
                recalls[shape] = max(recalls.get(shape, (0.0, 200)), (seconds, status))
    finally:
        stop.set()
        prober.join()
    server.stop()
    server.assert_clean_log()
    figures.add("probe3_prompts", prompt_shapes=len(shapes), prompt_chars=CHARS + 33,
                slowest_recall_s=round(max(seconds for seconds, _ in recalls.values()), 3),
                health_probes=len(health), slowest_health_s=round(max(seconds for seconds, _ in health), 3))
    assert all(status == 200 for _, status in recalls.values()), recalls
    assert health and all(status == 200 for _, status in health), [h for h in health if h[1] != 200][:10]
