"""Replay-buffer timing: a 1M-capacity prioritized buffer's sample(256) + update_priorities(256),
and a uniform buffer's sample(256), on CartPole-shaped transitions.

    python bench/bench_buffer.py [--reps 2000] [--capacity 1000000] [--batch 256]

Times are per call pair in milliseconds: median and 90th percentile over ``--reps`` repetitions
(after a warm-up), with the buffer full.  No framework is imported.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from note_rl.buffers import PrioritizedReplayBuffer, ReplayBuffer

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_machine  # noqa: E402


def fill(buffer: ReplayBuffer, capacity: int, rng: np.random.Generator, chunk: int = 100_000) -> None:
    """Fill the buffer with random CartPole-shaped transitions (float32 states, int actions)."""
    for start in range(0, capacity, chunk):
        n = min(chunk, capacity - start)
        buffer.add_batch(rng.normal(size=(n, 4)).astype(np.float32), rng.integers(0, 2, n),
                         rng.normal(size=(n, 4)).astype(np.float32), np.ones(n, np.float32),
                         (rng.random(n) < 0.01).astype(np.float32))


def time_reps(fn, reps: int, warmup: int = 50) -> np.ndarray:
    for _ in range(warmup):
        fn()
    out = np.empty(reps)
    for i in range(reps):
        t = time.perf_counter()
        fn()
        out[i] = time.perf_counter() - t
    return out * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--capacity", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()
    print_machine()
    rng = np.random.default_rng(0)

    per = PrioritizedReplayBuffer(args.capacity, alpha=0.6, beta=0.4, seed=0)
    fill(per, args.capacity, rng)
    td = np.abs(rng.normal(size=(args.reps + 50, args.batch)))
    calls = iter(range(args.reps + 50))

    def per_round() -> None:
        batch = per.sample(args.batch)
        per.update_priorities(batch.indices, td[next(calls)])

    uniform = ReplayBuffer(args.capacity, seed=0)
    fill(uniform, args.capacity, rng)
    results = {
        "prioritized sample+update_priorities": time_reps(per_round, args.reps),
        "prioritized sample only": time_reps(lambda: per.sample(args.batch), args.reps),
        "uniform sample": time_reps(lambda: uniform.sample(args.batch), args.reps),
    }
    print(f"== replay buffers: capacity {args.capacity:,}, batch {args.batch}, {args.reps} reps (ms per call)")
    for name, ms in results.items():
        print(f"{name}: median={np.median(ms):.3f} p90={np.percentile(ms, 90):.3f} min={ms.min():.3f}")


if __name__ == "__main__":
    main()
