"""Framework threads of a single run, on an idle and on a busy machine.

    python bench/bench_threads.py [--steps 4000] [--repeats 2] [--threads 1,2]

Runs DQN on CartPole (``note-tune agent=dqn``, torch) for ``--steps`` env steps with each
``backend.threads`` value, first on the idle machine, then with one core-bound Python loop running
beside it (another job on the machine), interleaving the settings in each repeat.  Prints the
wall time of each run (process start to exit, as a user sees it) and the busy/idle ratios.  The
default ``backend.threads: null`` picks the cores not busy (CPU count less the 1-minute load
average): the busy column shows why.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time


def _spin(seconds: float) -> None:
    end = time.time() + seconds
    while time.time() < end:
        pass


def _run(threads: int, steps: int, folder: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tuner", "agent=dqn", f"budget.steps={steps}", f"backend.threads={threads}",
                    "logger=none", f"hydra.run.dir={folder}/t{threads}"], check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", default="1,2")
    args = parser.parse_args()
    settings = [int(t) for t in args.threads.split(",")]
    times: dict[tuple[str, int], list[float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for load in ("idle", "busy"):
            hog = None
            if load == "busy":
                hog = mp.get_context("spawn").Process(target=_spin, args=(3600,), daemon=True)
                hog.start()
            try:
                for _ in range(args.repeats):
                    for t in settings:
                        times.setdefault((load, t), []).append(_run(t, args.steps, folder))
            finally:
                if hog is not None:
                    hog.terminate()
    print(f"cpu_count={os.cpu_count()} steps={args.steps} (seconds, min of {args.repeats})")
    for t in settings:
        idle, busy = min(times[("idle", t)]), min(times[("busy", t)])
        print(f"threads={t}: idle {idle:.1f}  busy {busy:.1f}  busy/idle {busy / idle:.2f}x")


if __name__ == "__main__":
    main()
