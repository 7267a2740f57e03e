"""Memory of a replay buffer of Atari-shaped observations (4 stacked 84x84 uint8 frames) stored in
the frame pool, filled with ``--items`` transitions, against the dense layout's size.

    python bench/bench_frame_memory.py [--items 100000] [--episode 1000] [--prioritized]
    python bench/bench_frame_memory.py --timing   # add() and sample(32): frame pool against dense

Episodes of ``--episode`` steps of random frames, stacked as gymnasium's FrameStackObservation
does (``padding_type="reset"``: the first frame repeated), each episode's last step truncated
(its final observation is one more frame).  Reports the buffer's array bytes, the resident-set
growth while filling (Linux ``/proc/self/statm``) and tracemalloc's peak.  No framework is imported.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from note_rl.buffers import PrioritizedReplayBuffer, ReplayBuffer

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_machine  # noqa: E402

K, H, W = 4, 84, 84


def rss() -> int:
    """Resident set size of this process in bytes."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def fill(buffer: ReplayBuffer, items: int, episode: int, rng: np.random.Generator) -> None:
    """``items`` one-step transitions of stacked random frames, episode by episode."""
    stack = None
    for t in range(items):
        frame = rng.integers(0, 256, (H, W), dtype=np.uint8)
        if t % episode == 0:  # reset: the first frame fills the stack
            stack = np.repeat(frame[None], K, axis=0)
            frame = rng.integers(0, 256, (H, W), dtype=np.uint8)
        nxt = np.concatenate([stack[1:], frame[None]])
        buffer.add(stack, t % 6, nxt, 1.0, 0.0)
        stack = nxt


def timing(n: int = 2000, capacity: int = 1000) -> None:
    """Microseconds per ``add()`` (pre-generated stacks) and per ``sample(32)``, both layouts."""
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (n + K, H, W), dtype=np.uint8)
    for mode in (False, "auto"):
        buffer = ReplayBuffer(capacity, frames=mode, seed=0)
        t0 = time.perf_counter()
        for i in range(n):
            buffer.add(frames[i:i + K], 1, frames[i + 1:i + 1 + K], 1.0, 0.0)
        add_us = (time.perf_counter() - t0) / n * 1e6
        t0 = time.perf_counter()
        for _ in range(200):
            buffer.sample(32)
        sample_us = (time.perf_counter() - t0) / 200 * 1e6
        print(f"frames={mode!s:5}: add {add_us:.0f} us, sample(32) {sample_us:.0f} us")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--items", type=int, default=100_000)
    p.add_argument("--episode", type=int, default=1000)
    p.add_argument("--prioritized", action="store_true")
    p.add_argument("--timing", action="store_true", help="time add() and sample(32) instead")
    args = p.parse_args()
    print_machine()
    if args.timing:
        timing()
        return
    rng = np.random.default_rng(0)
    tracemalloc.start()
    before = rss()
    t0 = time.perf_counter()
    buffer = (PrioritizedReplayBuffer if args.prioritized else ReplayBuffer)(args.items, seed=0)
    fill(buffer, args.items, args.episode, rng)
    seconds = time.perf_counter() - t0
    grown = rss() - before
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    store = buffer.frame_store
    nbytes = sum(a.nbytes for a in buffer.data.values()) + store.refcount.nbytes
    live = store.n_live * int(np.prod(store.frame_shape))
    dense = args.items * 2 * K * H * W
    gib = 2 ** 30
    print(f"{type(buffer).__name__}: {len(buffer):,} transitions of {K}x{H}x{W} uint8, "
          f"{store.n_live:,} frames in the pool ({args.items // args.episode} episodes), filled in {seconds:.1f} s")
    print(f"arrays allocated {nbytes / gib:.3f} GiB (frames live {live / gib:.3f} GiB); RSS growth "
          f"{grown / gib:.3f} GiB; tracemalloc peak {peak / gib:.3f} GiB; dense layout {dense / gib:.2f} GiB")
    sample = buffer.sample(32)
    assert sample.state.shape == (32, K, H, W) and sample.state.dtype == np.uint8


if __name__ == "__main__":
    main()
