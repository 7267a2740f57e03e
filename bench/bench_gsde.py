"""On-policy gSDE against Stable-Baselines3: rl-zoo3's PPO and A2C presets on MountainCarContinuous-v0,
seed by seed, ours then SB3's (A B A B), each run's greedy evaluations (5 deterministic episodes at the
same five points of its budget) side by side.

    pip install stable-baselines3      # not a dependency of this project; only for this comparison
    python bench/bench_gsde.py ppo|a2c [--seeds 3] [--no-sde]

Ours runs as ``note-tune agent=<algo> env=mountain_car_continuous seed=<s>`` (the preset in
conf/hyperparams/, gSDE on), SB3 with the values of rl-zoo3's hyperparams/<algo>.yml and an
``EvalCallback`` (observation statistics synced from the training env, as rl-zoo3 evaluates).
``--no-sde`` turns gSDE off on both sides (the presets' other values unchanged).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUDGET = {"ppo": 20_000, "a2c": 100_000}


def ours(algo: str, seed: int, sde: bool) -> dict:
    with tempfile.TemporaryDirectory() as run_dir:
        cmd = [sys.executable, "-m", "tuner", f"agent={algo}", "env=mountain_car_continuous", f"seed={seed}",
               f"agent.use_sde={str(sde).lower()}", "logger=none", f"hydra.run.dir={run_dir}"]
        started = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
        wall = time.perf_counter() - started
        result = json.loads((Path(run_dir) / "result.json").read_text())
    return {"evals": [e["mean"] for e in result["evaluations"]], "wall": wall}


def sb3(algo: str, seed: int, sde: bool) -> dict:
    import torch
    from stable_baselines3 import A2C, PPO
    from stable_baselines3.common.callbacks import EvalCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    torch.set_num_threads(1)
    n_envs = 1 if algo == "ppo" else 4
    env = VecNormalize(make_vec_env("MountainCarContinuous-v0", n_envs=n_envs, seed=seed))
    eval_env = VecNormalize(make_vec_env("MountainCarContinuous-v0", n_envs=1, seed=seed + 1000),
                            training=False, norm_reward=False)
    if algo == "ppo":
        model = PPO("MlpPolicy", env, batch_size=256, n_steps=8, gamma=0.9999, learning_rate=7.77e-5,
                    ent_coef=0.00429, clip_range=0.1, n_epochs=10, gae_lambda=0.9, max_grad_norm=5,
                    vf_coef=0.19, use_sde=sde, policy_kwargs=dict(log_std_init=-3.29, ortho_init=False),
                    seed=seed, device="cpu")
    else:
        model = A2C("MlpPolicy", env, n_steps=100, ent_coef=0.0, use_sde=sde, sde_sample_freq=16,
                    policy_kwargs=dict(log_std_init=0.0, ortho_init=False), seed=seed, device="cpu")
    every = BUDGET[algo] // 5 // n_envs  # EvalCallback counts vector steps
    with tempfile.TemporaryDirectory() as log_path:  # EvalCallback keeps its results only with a log path
        callback = EvalCallback(eval_env, eval_freq=every, n_eval_episodes=5, log_path=log_path, verbose=0)
        started = time.perf_counter()
        model.learn(total_timesteps=BUDGET[algo], callback=callback)
        wall = time.perf_counter() - started
    return {"evals": [float(sum(r) / len(r)) for r in callback.evaluations_results], "wall": wall}


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("algo", choices=["ppo", "a2c"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--no-sde", action="store_true")
    args = parser.parse_args()
    sde = not args.no_sde
    print(f"{args.algo.upper()} MountainCarContinuous-v0, rl-zoo3's preset, gSDE {'on' if sde else 'off'}, "
          f"{BUDGET[args.algo]} env steps; greedy evaluations (5 episodes) at 1/5 .. 5/5 of the budget")
    rows = {"ours": [], "sb3": []}
    for seed in range(args.seeds):
        for name, fn in (("ours", ours), ("sb3", sb3)):
            r = fn(args.algo, seed, sde)
            rows[name].append(r)
            print(f"  seed {seed} {name:4s}: " + ", ".join(f"{x:7.1f}" for x in r["evals"]) + f"   ({r['wall']:.0f} s)",
                  flush=True)
    for name, runs in rows.items():
        finals = [r["evals"][-1] for r in runs]
        bests = [max(r["evals"]) for r in runs]
        solved = sum(f >= 90 for f in finals)
        print(f"{name:4s}: final mean {sum(finals) / len(finals):.1f} ({solved} of {len(finals)} >= 90), "
              f"best mean {sum(bests) / len(bests):.1f}")


if __name__ == "__main__":
    main()
