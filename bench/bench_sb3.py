"""Reference: Stable-Baselines3 at the same rl-zoo3 CartPole-v1 settings as bench_dqn.py / bench_ppo.py.

    pip install stable-baselines3      # not a dependency of this project; only for this comparison
    python bench/bench_sb3.py dqn|ppo [--seeds 3]

Measured the same way as our benches: one torch thread, training episodes (with exploration) in
the "last 20 episodes" mean, stop once it reaches 475, wall time of the whole ``learn()`` call.
Run it right after bench_dqn.py / bench_ppo.py: this machine's speed drifts, so only figures taken
together compare (the ``# ... reference:`` line prints the drift indicators).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CRITERION, TRIAL_COUNT, RunResult, print_machine, report  # noqa: E402


def _stopper() -> object:
    from stable_baselines3.common.callbacks import BaseCallback

    class StopAtCriterion(BaseCallback):
        def _on_step(self) -> bool:
            episodes = [e["r"] for e in self.model.ep_info_buffer][-TRIAL_COUNT:]
            return not (len(episodes) >= TRIAL_COUNT and sum(episodes) / len(episodes) >= CRITERION)

    return StopAtCriterion()


def make_model(algo: str, seed: int, n_envs: int = 1) -> object:
    import torch
    from stable_baselines3 import DQN, PPO
    from stable_baselines3.common.env_util import make_vec_env

    if algo == "dqn":
        # SB3 counts train_freq in vector steps: 256 // n_envs of them are 256 env steps, as ours
        env = make_vec_env("CartPole-v1", n_envs=n_envs, seed=seed) if n_envs > 1 else "CartPole-v1"
        return DQN("MlpPolicy", env, learning_rate=2.3e-3, batch_size=64, buffer_size=100_000,
                   learning_starts=1000, gamma=0.99, target_update_interval=10, train_freq=256 // n_envs,
                   gradient_steps=128, exploration_fraction=0.16, exploration_final_eps=0.04,
                   policy_kwargs=dict(net_arch=[256, 256]), seed=seed, device="cpu")
    env = make_vec_env("CartPole-v1", n_envs=8, seed=seed)
    lin = lambda start: (lambda progress: progress * start)  # noqa: E731 - rl-zoo's lin_ schedules
    return PPO("MlpPolicy", env, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20,
               ent_coef=0.0, learning_rate=lin(1e-3), clip_range=lin(0.2), seed=seed, device="cpu",
               policy_kwargs=dict(activation_fn=torch.nn.Tanh))


def run(algo: str, seed: int, n_envs: int = 1) -> RunResult:
    budget = 50_000 if algo == "dqn" else 100_000
    model = make_model(algo, seed, n_envs)
    started = time.perf_counter()
    model.learn(total_timesteps=budget, callback=_stopper())
    wall = time.perf_counter() - started
    rewards = [e["r"] for e in model.ep_info_buffer][-TRIAL_COUNT:]
    final = sum(rewards) / max(1, len(rewards))
    return RunResult(seed, model.num_timesteps, wall, final >= CRITERION, -1, final)


def main() -> None:
    import argparse

    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("algo", choices=["dqn", "ppo"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="also print the results as JSON")
    parser.add_argument("--n-envs", type=int, default=1, help="DQN: vectorised env copies")
    parser.add_argument("--flush-denormal", action="store_true",
                        help="flush subnormal floats to zero, as note_rl's train() does (not SB3's default)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.flush_denormal:
        torch.set_flush_denormal(True)
    print_machine(1)
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    report(f"SB3 {args.algo.upper()} CartPole-v1", [run(args.algo, s, args.n_envs) for s in seeds], args.json)


if __name__ == "__main__":
    main()
