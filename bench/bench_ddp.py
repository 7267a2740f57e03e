"""One replica against two data-parallel replicas (torch DDP over gloo on 127.0.0.1), back to back.

    python bench/bench_ddp.py --rounds 3

Each round runs, in fresh processes, every workload once with ``train()`` (1 replica) and once
with ``distributed_training`` under ``note_rl.distributed.launch`` (2 replicas, one thread each), and
prints the total env steps/s over the replicas and the gradient steps/s (a DDP step is one global
step: every replica takes part).  Workloads: DQN acting only (no gradient step), DQN and PPO
training at rl-zoo3's CartPole settings; plus the cost of one gradient all-reduce.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

STEPS = {"collect": 20_000, "dqn": 6_000, "ppo": 8_192}


def _agent(kind: str):
    import torch

    from note_rl.agents.torch import DQN, PPO
    from note_rl.policy import EpsGreedyQPolicy

    if kind == "ppo":
        a = PPO(4, [64, 64], 2, env="CartPole-v1", seed=0, n_steps=512, n_epochs=20, lam=0.8, gamma=0.98)
        a.set(batch=256)
        return a, torch.optim.Adam(a.backend.flatten(a.param), lr=1e-3)
    a = DQN(4, [256, 256], 2, env="CartPole-v1", seed=0)
    starts = 10**9 if kind == "collect" else 1000
    a.set(policy=EpsGreedyQPolicy(0.04), pool_size=100_000, batch=64, learning_starts=starts,
          train_freq=256, num_updates=128, update_steps=10)
    return a, torch.optim.Adam(a.param, lr=2.3e-3)


def run(rank: int, kind: str, ddp: bool) -> dict:
    import torch

    torch.set_num_threads(1)
    agent, opt = _agent(kind)
    started = time.perf_counter()
    if ddp:
        agent.distributed_training(opt, steps=STEPS[kind], p=0)
    else:
        agent.train(opt, steps=STEPS[kind], p=0)
    return {"s": time.perf_counter() - started, "env": agent.step_counter, "grad": agent.batch_counter}


def all_reduce_us(rank: int) -> float:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    buf = torch.zeros(4_740)  # a 4-64-64-2 network's parameters and the two flags (19 KB)
    for _ in range(50):
        dist.all_reduce(buf)
    started = time.perf_counter()
    for _ in range(1000):
        dist.all_reduce(buf)
    return (time.perf_counter() - started) / 1000 * 1e6


def main() -> None:
    from note_rl.distributed import launch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    opts = parser.parse_args()
    rows: dict[str, list[tuple[float, float, float, float]]] = {k: [] for k in STEPS}
    for r in range(opts.rounds):
        for kind in STEPS:
            (one,) = launch(run, nprocs=1, args=(kind, False))  # a fresh process, like the replicas
            two = launch(run, nprocs=2, args=(kind, True))
            wall2 = max(x["s"] for x in two)
            row = (one["env"] / one["s"], sum(x["env"] for x in two) / wall2,
                   one["grad"] / one["s"], two[0]["grad"] / wall2)
            rows[kind].append(row)
            print(f"round {r} {kind:8s} env steps/s: 1 replica {row[0]:8.0f}  2 replicas {row[1]:8.0f} "
                  f"({row[1] / row[0]:.2f}x)   gradient steps/s: {row[2]:6.0f} -> {row[3]:6.0f} "
                  f"({row[3] / row[2] if row[2] else float('nan'):.2f}x)", flush=True)
    us = launch(all_reduce_us, nprocs=2)
    summary = {}
    for kind, got in rows.items():
        env_ratio = statistics.median(b / a for a, b, _, _ in got)
        grad = [d / c for _, _, c, d in got if c]
        summary[kind] = {"env_ratio": env_ratio, "grad_ratio": statistics.median(grad) if grad else None}
        print(f"median {kind}: total env steps/s {env_ratio:.2f}x"
              + (f", gradient steps/s {summary[kind]['grad_ratio']:.2f}x" if grad else ""))
    print(f"one all-reduce of 19 KB over gloo between 2 local processes: {statistics.median(us):.0f} us")
    if opts.json:
        print(json.dumps({"summary": summary, "all_reduce_us": statistics.median(us)}))


if __name__ == "__main__":
    main()
