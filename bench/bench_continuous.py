"""SAC and TD3 on Pendulum-v1 at rl-zoo3's settings: note_rl (torch) against Stable-Baselines3 in
the same command, runs alternating (ours, SB3, ours, SB3, ...) so that the machine's drift hits both.

    pip install stable-baselines3      # not a dependency of this project; only for this comparison
    python bench/bench_continuous.py sac|td3 [--seeds 1] [--steps 20000]

Both sides: one torch thread, rl-zoo3's hyperparameters (SAC: lr 1e-3, buffer 1e6, batch 256,
learning_starts 100, [256, 256]; TD3: gamma 0.98, buffer 2e5, learning_starts 10000, Gaussian
action noise 0.1, lr 1e-3, batch 256, [400, 300]), one gradient step per env step, wall time of the
whole training call.  "Steps to -200" is the env step at which the mean return of the last 5
training episodes (exploration included) first reaches -200.  The printed ratio is ours / SB3's
env steps per second of each pair; the median over pairs is the figure to quote.  note_rl's
``train()`` flushes subnormal floats to zero while it runs (SB3 does not); ``--sb3-flush-denormal``
lets SB3's runs flush them too, to show how much of the ratio that setting is.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_machine  # noqa: E402

TARGET, WINDOW, EPISODE = -200.0, 5, 200


def steps_to_target(returns: list[float]) -> int | None:
    for i in range(WINDOW - 1, len(returns)):
        if np.mean(returns[i - WINDOW + 1:i + 1]) >= TARGET:
            return (i + 1) * EPISODE  # Pendulum episodes are 200 steps
    return None


def run_ours(algo: str, seed: int, steps: int) -> dict:
    import torch

    from note_rl.agents.torch import SAC, TD3
    from note_rl.noise import GaussianWhiteNoiseProcess

    if algo == "sac":
        agent = SAC(hidden_size=[256, 256], env="Pendulum-v1", seed=seed)
        agent.set(pool_size=1_000_000, batch=256, learning_starts=100, seed=seed)
    else:
        agent = TD3(hidden_size=[400, 300], gamma=0.98, env="Pendulum-v1", seed=seed)
        agent.set(noise=GaussianWhiteNoiseProcess(sigma=0.1, size=agent.action_dim), pool_size=200_000,
                  batch=256, learning_starts=10_000, seed=seed)
    # a plain torch Adam, as a user writes it (train() switches one left at torch's defaults to its
    # fused kernel; SB3 builds its Adam with the defaults too)
    optimizers = [torch.optim.Adam(p, lr=1e-3) for p in agent.param]
    started = time.perf_counter()
    agent.fit(optimizers, None, steps=steps, p=0)
    wall = time.perf_counter() - started
    return {"wall_s": wall, "returns": [float(r) for r in agent.reward_list]}


def run_sb3(algo: str, seed: int, steps: int) -> dict:
    from stable_baselines3 import SAC, TD3
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.noise import NormalActionNoise

    returns: list[float] = []

    class Returns(BaseCallback):
        def _on_step(self) -> bool:
            returns.extend(float(info["episode"]["r"]) for info in self.locals["infos"] if "episode" in info)
            return True

    if algo == "sac":
        model = SAC("MlpPolicy", "Pendulum-v1", learning_rate=1e-3, seed=seed, device="cpu")
    else:
        model = TD3("MlpPolicy", "Pendulum-v1", learning_rate=1e-3, gamma=0.98, buffer_size=200_000,
                    learning_starts=10_000, action_noise=NormalActionNoise(np.zeros(1), 0.1 * np.ones(1)),
                    policy_kwargs=dict(net_arch=[400, 300]), seed=seed, device="cpu")
    started = time.perf_counter()
    model.learn(total_timesteps=steps, callback=Returns())
    wall = time.perf_counter() - started
    return {"wall_s": wall, "returns": returns}


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("algo", choices=["sac", "td3"])
    parser.add_argument("--seeds", type=int, default=1, help="pairs of runs, seeds 0, 1, ...")
    parser.add_argument("--steps", type=int, default=20_000, help="env steps per run (rl-zoo3: 20,000)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--sb3-flush-denormal", action="store_true",
                        help="torch.set_flush_denormal(True) during SB3's runs too (not its default)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print_machine(1)
    rows, ratios = [], []
    for seed in range(args.seeds):
        pair = {}
        for side, fn in (("note_rl", run_ours), ("sb3", run_sb3)):
            torch.set_flush_denormal(side == "sb3" and args.sb3_flush_denormal)
            out = fn(args.algo, seed, args.steps)
            torch.set_flush_denormal(False)
            out.update(steps_per_s=args.steps / out["wall_s"], steps_to_target=steps_to_target(out["returns"]),
                       final_mean=float(np.mean(out["returns"][-WINDOW:])))
            pair[side] = out
            print(f"{args.algo.upper()} {side:8s} seed {seed}: {out['steps_per_s']:7.1f} env steps/s, "
                  f"steps to {TARGET:.0f}: {out['steps_to_target']}, last-{WINDOW} mean {out['final_mean']:.0f}",
                  flush=True)
        ratios.append(pair["note_rl"]["steps_per_s"] / pair["sb3"]["steps_per_s"])
        rows.append({side: {k: v for k, v in out.items() if k != "returns"} for side, out in pair.items()})
    print(f"{args.algo.upper()} env steps/s ratio note_rl / SB3: median {statistics.median(ratios):.2f} "
          f"over {len(ratios)} pair(s) {[round(r, 2) for r in ratios]}")
    if args.json:
        print(json.dumps({"algo": args.algo, "steps": args.steps, "pairs": rows,
                          "median_ratio": statistics.median(ratios)}))


if __name__ == "__main__":
    main()
