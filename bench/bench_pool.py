"""Pool network (``train(pool_network=True, processes=2)``) against one process.

    python bench/bench_pool.py [--backend torch|tf] [--seeds 3] [--parts collect,dqn,ppo]
                               [--collect-steps 100000] [--collect-num-store 30]
                               [--train-steps 20000] [--num-store 1] [--processes 2]

* ``collect``: collection only - the DQN of bench_dqn.py (256x256 Q-network, linear epsilon-greedy)
  with ``learning_starts`` beyond the budget, so no gradient step runs; env steps/s of the whole
  ``train()`` call (worker start-up included) with one process and with 2 worker processes, each
  playing ``--collect-num-store`` episodes per phase.  Worker start-up (spawn, imports, env
  construction) is also timed on its own.
* ``dqn`` / ``ppo``: the training settings of bench_dqn.py / bench_ppo.py for the same number of
  env steps, one process against ``pool_network=True, processes=--processes`` (DQN with
  ``num_store=--num-store`` and the default ``parallel_store_and_training=True``: gradient steps
  run while the workers collect).

For each seed the one-process run and the pool run are taken back to back, so that the machine's
drifting speed affects both alike.
"""

from __future__ import annotations

import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, parse_args, report  # noqa: E402


def _extra_args(parser: object) -> None:
    parser.add_argument("--parts", default="collect,dqn,ppo")
    parser.add_argument("--collect-steps", type=int, default=100_000)
    parser.add_argument("--collect-num-store", type=int, default=30,
                        help="episodes per worker per phase when only collecting")
    parser.add_argument("--train-steps", type=int, default=20_000)
    parser.add_argument("--num-store", type=int, default=1, help="episodes per worker per phase (DQN training)")
    parser.add_argument("--processes", type=int, default=2, help="pool workers for the training runs")


def startup_seconds(reps: int = 3) -> list[float]:
    """Start and stop a 2-worker pool of CartPole envs (nothing else)."""
    import gymnasium as gym

    from note_rl.core.envs import EnvFactory
    from note_rl.core.pool import WorkerPool

    init = dict(env_factory=EnvFactory(gym.make("CartPole-v1")), policy=None, noise=None,
                num_steps=None, gamma=1.0, discrete=True, seed=0, actor=None)
    out = []
    for _ in range(reps):
        started = time.perf_counter()
        WorkerPool([init, init], "spawn").close()
        out.append(time.perf_counter() - started)
    return out


def compare(title: str, single: list, pooled: list, as_json: bool) -> None:
    s = report(f"{title}: one process", single, as_json)
    p = report(f"{title}: pool", pooled, as_json)
    ratio = p["median_steps_per_s"] / s["median_steps_per_s"]
    per_seed = [b.steps_per_s / a.steps_per_s for a, b in zip(single, pooled)]
    print(f"pool / one process (median steps/s): {ratio:.2f}x; per seed: "
          + ", ".join(f"{r:.2f}x" for r in per_seed) + "\n")


def interleaved(run: Any, seeds: range, pool_kwargs: dict[str, Any], **kwargs: Any) -> tuple[list, list]:
    """One-process and pool runs, back to back for each seed."""
    single, pooled = [], []
    for seed in seeds:
        single.append(run(seed, **kwargs))
        pooled.append(run(seed, **kwargs, **pool_kwargs))
    return single, pooled


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], extra=_extra_args)
    parts = args.parts.split(",")
    seeds = range(args.seeds)
    if "collect" in parts:
        starts = startup_seconds()
        print("== worker start-up (2 workers, spawn): " + ", ".join(f"{t:.2f}s" for t in starts)
              + f"; median {median(starts):.2f}s\n")
        import bench_dqn

        pool = dict(pool_network=True, processes=2, num_store=args.collect_num_store)
        single, pooled = interleaved(partial(bench_dqn.run, args.backend), seeds, pool,
                                     steps=args.collect_steps, learning_starts=10**12, criterion=None)
        compare(f"collection only, {args.collect_steps} env steps, num_store={args.collect_num_store} "
                f"({args.backend})", single, pooled, args.json)
    for name in ("dqn", "ppo"):
        if name not in parts:
            continue
        module = __import__(f"bench_{name}")
        pool = dict(pool_network=True, processes=args.processes)
        if name == "dqn":
            pool["num_store"] = args.num_store
        single, pooled = interleaved(partial(module.run, args.backend), seeds, pool,
                                     steps=args.train_steps, criterion=None)
        settings = ", ".join(f"{k}={v}" for k, v in pool.items() if k != "pool_network")
        compare(f"{name.upper()} training, {args.train_steps} env steps, pool {settings} ({args.backend})",
                single, pooled, args.json)


if __name__ == "__main__":
    main()
