"""A call's cost from Python against the CLI's: `eval` and `optimize` of a
study, each as `Study.evaluate` / `Study.optimize` on a study loaded once,
with the load, and as `dimsum ... --json` in a subprocess (its JSON
parsed). Prints the median of each, ms.

    target/py-venv/bin/python scripts/python-overhead.py [STUDY] [BINARY]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from typing import Callable, List

import dimsum

STUDY = sys.argv[1] if len(sys.argv) > 1 else "studies/gpt3-4d.toml"
BINARY = sys.argv[2] if len(sys.argv) > 2 else "target/release/dimsum"


def median_ms(f: Callable[[], object], n: int) -> float:
    f()  # warm: caches, pages
    times: List[float] = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def cli(*args: str) -> object:
    out = subprocess.run([BINARY, *args, "--json"], capture_output=True, check=True, text=True).stdout
    return json.loads(out)


def main() -> None:
    study = dimsum.Study.load(STUDY)
    bw = [float(b) for b in study.bw or [250.0] * len(study.dims)]
    flag = ",".join(repr(b) for b in bw)
    rows = [
        ("eval", lambda: study.evaluate(bw, progress=False),
         lambda: dimsum.Study.load(STUDY).evaluate(bw, progress=False),
         lambda: cli("eval", STUDY, "--bw", flag)),
        ("optimize", lambda: study.optimize(progress=False),
         lambda: dimsum.Study.load(STUDY).optimize(progress=False),
         lambda: cli("optimize", STUDY)),
    ]
    print(f"{STUDY}: median ms over 50 calls")
    print(f"{'call':<10}{'python':>10}{'+ load':>10}{'CLI':>10}{'CLI - python':>14}")
    for name, py, loaded, sub in rows:
        a, b, c = median_ms(py, 50), median_ms(loaded, 50), median_ms(sub, 50)
        print(f"{name:<10}{a:>10.2f}{b:>10.2f}{c:>10.2f}{c - a:>14.2f}")


if __name__ == "__main__":
    main()
