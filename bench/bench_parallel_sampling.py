"""Mini-batches drawn by sampler processes (``train(processes_pr=N)`` / ``processes_her=N``)
against the single-process samplers.

    python bench/bench_parallel_sampling.py [--batches 2000] [--batch 256] [--capacity 100000]
                                            [--workers 2,4] [--repeats 3] [--parts pr,her]

Buffers, full: ``pr`` is a prioritized buffer of CartPole-shaped transitions with random
priorities (alpha 0.6, beta 0.4); ``her`` a HER buffer of 50-step episodes with Fetch-sized
observations (10 floats), 4-float actions and 3-float goals, relabelled (her_k=4) by
PointReachEnv's ``compute_reward``.  For each, ``--batches`` draws of ``--batch`` items are timed
with the buffer's own ``sample`` and with a ``ParallelSampler`` of each worker count, the
configurations interleaved within each of ``--repeats`` rounds (the machine's speed drifts).  Every
configuration draws from its own copy of the buffer (a sampler rebinds its buffer's arrays to
shared memory), with the same generator state.

Where the time goes, per batch: ``ping`` is an empty round trip to every worker, ``pickle`` is
pickling and unpickling (with multiprocessing's pickler) what crosses the pipes for the whole
batch: the requests and the drawn rows; ``chunk`` is drawing one worker's share in this process
(about the work a worker does, on warm caches).  No framework is imported.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from multiprocessing.reduction import ForkingPickler
from pathlib import Path
from typing import Callable

import numpy as np

from note_rl.buffers import HerReplayBuffer, PrioritizedReplayBuffer
from note_rl.buffers.parallel_sampling import EnvRewardDone, ParallelSampler
from note_rl.goal_envs import PointReachEnv

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_machine  # noqa: E402
from bench_buffer import fill  # noqa: E402


def pr_buffer(capacity: int) -> PrioritizedReplayBuffer:
    buf = PrioritizedReplayBuffer(capacity, alpha=0.6, beta=0.4, seed=0)
    rng = np.random.default_rng(0)
    fill(buf, capacity, rng)
    buf.update_priorities(np.arange(capacity), np.abs(rng.normal(size=capacity)))
    return buf


def her_buffer(capacity: int, episode: int = 50, obs_dim: int = 10, goal_dim: int = 3) -> HerReplayBuffer:
    buf = HerReplayBuffer(capacity, EnvRewardDone(PointReachEnv(dim=goal_dim).compute_reward), her_k=4, seed=0)
    rng = np.random.default_rng(0)

    def floats(*shape: int) -> np.ndarray:
        return rng.uniform(-1.0, 1.0, (episode, *shape)).astype(np.float32)

    for _ in range(capacity // episode):
        buf.add_episode({"obs": floats(obs_dim), "goal": floats(goal_dim), "achieved": floats(goal_dim),
                         "action": floats(4), "next_obs": floats(obs_dim),
                         "reward": -np.ones(episode, np.float32), "done": np.zeros(episode, np.float32),
                         "offset": np.arange(episode - 1, -1, -1)})
    return buf


def per_batch_ms(fn: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e3


def bench(name: str, base: PrioritizedReplayBuffer | HerReplayBuffer, args: argparse.Namespace) -> None:
    single = copy.deepcopy(base)
    draws: dict[str, Callable[[], object]] = {"1 process": lambda: single.sample(args.batch)}
    samplers: dict[int, ParallelSampler] = {}
    notes: dict[str, str] = {}
    try:
        for n in args.workers:
            start = time.perf_counter()
            sampler = samplers[n] = ParallelSampler(copy.deepcopy(base), n)
            started = time.perf_counter() - start
            first = per_batch_ms(lambda: sampler.sample(args.batch), 1)  # shares the arrays
            draws[f"{n} workers"] = lambda s=sampler: s.sample(args.batch)
            notes[f"{n} workers"] = f"start-up {started:.2f} s, first draw (copies the buffer into shared memory) {first:.0f} ms"
        times: dict[str, list[float]] = {label: [] for label in draws}
        for _ in range(args.repeats):
            for label, draw in draws.items():
                times[label].append(per_batch_ms(draw, args.batches))
        print(f"== {name}: capacity {args.capacity:,}, batch {args.batch}, {args.batches} batches x "
              f"{args.repeats} interleaved repeats (ms per batch: median of repeats [min, max])")
        base_ms = float(np.median(times["1 process"]))
        for label, ms in times.items():
            ratio = "" if label == "1 process" else f"  = {np.median(ms) / base_ms:.2f}x the time of 1 process"
            print(f"{label}: {np.median(ms):.3f} [{min(ms):.3f}, {max(ms):.3f}]{ratio}")
            if label in notes:
                print(f"    {notes[label]}")
        rows = tuple(single.sample(args.batch))  # the reply, as one message (n messages cost more)
        request = ("draw_pr", np.random.default_rng(0).random(args.batch))
        for n, sampler in samplers.items():
            ping = per_batch_ms(sampler.ping, 500)
            pickled = per_batch_ms(lambda: [ForkingPickler.loads(ForkingPickler.dumps(m)) for m in (request, rows)], 500)
            chunk = per_batch_ms(lambda: single.sample(args.batch // n), 500)
            print(f"where the time goes, {n} workers: ping {ping:.3f} ms, pickle rows {pickled:.3f} ms, "
                  f"one chunk of {args.batch // n} in-process {chunk:.3f} ms")
    finally:
        for sampler in samplers.values():
            sampler.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--capacity", type=int, default=100_000)
    parser.add_argument("--workers", default="2,4", help="comma-separated worker counts")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--parts", default="pr,her")
    args = parser.parse_args()
    args.workers = [int(n) for n in args.workers.split(",")]
    print_machine()
    builders = {"pr": ("prioritized replay", pr_buffer), "her": ("HER", her_buffer)}
    for part in args.parts.split(","):
        name, build = builders[part]
        bench(name, build(args.capacity), args)


if __name__ == "__main__":
    main()
