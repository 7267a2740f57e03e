"""Adjusters on CartPole-v1: overhead at the default cadence, and the learning effect.

    python bench/bench_adjusters.py overhead [--backend torch] [--steps 20000] [--seed 0]
    python bench/bench_adjusters.py learning --setup gns|ess [--backend torch] [--seeds 3] [--steps 50000]

Agent: DQN at rl-zoo3's CartPole settings (as bench_dqn.py): [256, 256] Huber, Adam 2.3e-3,
batch 64, train_freq 256 x 128 updates, target every 10 steps, 100k buffer, linear epsilon.
The ESS setups add prioritized replay (``PR=True``), which the ESS needs.

* ``overhead``: the time spent inside the adjuster's runs (signal + rules + reporting) as a share
  of the ``train()`` wall time, at the default ``every`` (10 gradient steps for ESS, 100 for GNS,
  8 gradients per GNS measurement).  Also a same-seed A/B against no adjuster with a
  signal-only adjuster (no rules, so the two runs train identically and only the measurement
  differs); that wall-time difference is noisy on a shared machine and is reported as measured.
* ``learning``: mean return of the last 20 episodes every 5,000 env steps, median over seeds, with
  and without the adjuster, at equal env steps (no early stop).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

SETUPS: dict[str, dict[str, Any]] = {
    # batch towards B_simple (McCandlish et al.), lr down when the minibatch is noisier than its signal
    "gns": {"PR": False, "adjuster": {"kind": "gns", "batch_params": {"min": 32, "max": 256, "align": 32},
                                      "lr_params": {"rate": 2e-4, "min": 5e-4, "max": 5e-3}}},
    # Note_rl's PPO_pr recipe on DQN: the batch follows the ESS (no target), within [64, 256]
    "ess": {"PR": True, "adjuster": {"kind": "ess", "batch_params": {"min": 64, "max": 256, "align": 64}}},
}


def make_agent(backend: str, seed: int, pr: bool) -> tuple[Any, Any]:
    from note_rl.policy import LinearEpsGreedyPolicy

    if backend == "torch":
        import torch

        torch.set_num_threads(1)  # one core per run: comparable timings on a shared 2-core box
        from note_rl.agents.torch import DQN

        agent = DQN(4, [256, 256], 2, loss="huber", seed=seed)
        opt = torch.optim.Adam(agent.param, lr=2.3e-3)
    else:
        import keras

        from note_rl.agents.keras import DQN

        agent = DQN(4, [256, 256], 2, loss="huber", seed=seed)
        opt = keras.optimizers.Adam(learning_rate=2.3e-3)
    agent.set(policy=LinearEpsGreedyPolicy(1.0, 0.04, decay_steps=8000), pool_size=100_000, batch=64,
              train_freq=256, num_updates=128, update_steps=10, learning_starts=1000, PR=pr,
              trial_count=20, seed=seed)
    return agent, opt


class Timed:
    """Wraps ``adjuster.run`` and adds up the time spent in it."""

    def __init__(self, adjuster: Any) -> None:
        self.seconds, self.runs = 0.0, 0
        inner = adjuster.run

        def run(agent: Any) -> Any:
            started = time.perf_counter()
            try:
                return inner(agent)
            finally:
                self.seconds += time.perf_counter() - started
                self.runs += 1

        adjuster.run = run


def train_once(backend: str, seed: int, steps: int, pr: bool, adjuster: dict[str, Any] | None,
               record: list[Any] | None = None) -> dict[str, Any]:
    from note_rl import LambdaCallback

    agent, opt = make_agent(backend, seed, pr)
    timer = None
    if adjuster is not None:
        agent.adjuster = adjuster
        timer = Timed(agent.adjuster)
    curve: list[tuple[int, float]] = []
    cb = LambdaCallback(on_episode_end=lambda e, logs: curve.append((logs["env_steps"], logs["reward"])),
                        on_adjust=(lambda logs: record.append(logs)) if record is not None else None)
    started = time.perf_counter()
    if backend == "torch":
        agent.train(opt, None, steps=steps, p=0, callbacks=[cb])
    else:
        agent.train(None, opt, None, steps=steps, p=0, callbacks=[cb])
    wall = time.perf_counter() - started
    return {"wall": wall, "adjust_s": timer.seconds if timer else 0.0, "runs": timer.runs if timer else 0,
            "grad_steps": agent.batch_counter, "curve": curve, "batch": agent.batch}


def overhead(args: argparse.Namespace) -> None:
    print(f"== overhead at the default cadence ({args.backend}, {args.steps} env steps, seed {args.seed})")
    print("| adjuster | runs | time in adjuster | share of train() | signal-only A/B: wall without -> with |")
    print("|---|---|---|---|---|")
    for name, setup in SETUPS.items():
        full = train_once(args.backend, args.seed, args.steps, setup["PR"], setup["adjuster"])
        base = train_once(args.backend, args.seed, args.steps, setup["PR"], None)
        signal_only = train_once(args.backend, args.seed, args.steps, setup["PR"], {"kind": name})
        share = full["adjust_s"] / full["wall"]
        ab = (signal_only["wall"] - base["wall"]) / base["wall"]
        print(f"| {name} | {full['runs']} | {full['adjust_s']:.2f} s | {100 * share:.2f} % | "
              f"{base['wall']:.1f} s -> {signal_only['wall']:.1f} s ({100 * ab:+.1f} %; "
              f"{100 * signal_only['adjust_s'] / signal_only['wall']:.2f} % inside) |")


def _curve_at(curve: list[tuple[int, float]], step: int, k: int = 20) -> float:
    returns = [r for s, r in curve if s <= step][-k:]
    return float(statistics.mean(returns)) if returns else float("nan")


def learning(args: argparse.Namespace) -> None:
    setup = SETUPS[args.setup]
    checkpoints = list(range(5000, args.steps + 1, 5000))
    rows: dict[str, list[list[float]]] = {}
    extras: dict[str, list[dict[str, Any]]] = {}
    for label, adjuster in (("without", None), (f"with {args.setup}", setup["adjuster"])):
        rows[label], extras[label] = [], []
        for seed in range(args.seeds):
            reports: list[Any] = []
            res = train_once(args.backend, seed, args.steps, setup["PR"], adjuster, reports)
            rows[label].append([_curve_at(res["curve"], c) for c in checkpoints])
            extras[label].append({"wall": round(res["wall"], 1), "grad_steps": res["grad_steps"],
                                  "final_batch": res["batch"],
                                  "last_adjust": {k: round(v, 5) for k, v in (reports[-1] if reports else {}).items()}})
            print(f"# {label} seed {seed}: {json.dumps(extras[label][-1])}", flush=True)
    pr = " (PR)" if setup["PR"] else ""
    print(f"== DQN{pr} CartPole-v1 ({args.backend}): mean of last 20 returns, median of {args.seeds} seeds")
    print("| env steps | " + " | ".join(rows) + " |")
    print("|---|" + "---|" * len(rows))
    for i, step in enumerate(checkpoints):
        cells = [f"{statistics.median(r[i] for r in runs):.1f}" for runs in rows.values()]
        print(f"| {step} | " + " | ".join(cells) + " |")
    print(json.dumps({"setup": args.setup, "adjuster": setup["adjuster"], "checkpoints": checkpoints,
                      "curves": rows, "runs": extras}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("overhead", "learning"))
    parser.add_argument("--backend", choices=("torch", "tf"), default="torch")
    parser.add_argument("--setup", choices=tuple(SETUPS), default="gns")
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    if args.steps is None:
        args.steps = 20_000 if args.mode == "overhead" else 50_000
    overhead(args) if args.mode == "overhead" else learning(args)


if __name__ == "__main__":
    main()
