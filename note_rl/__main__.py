"""``python -m note_rl``: train the default agent (DQN, PyTorch) on CartPole-v1 and print the result.

Options: ``--backend tf``, ``--episodes N``, ``--seed S``.  The full Hydra app is ``python -m tuner``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m note_rl", description=__doc__)
    parser.add_argument("--backend", choices=["torch", "tf"], default="torch")
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    from note_rl.policy import LinearEpsGreedyPolicy

    if args.backend == "torch":
        import torch

        from note_rl.agents.torch import DQN

        agent = DQN(4, [256, 256], 2, loss="huber", seed=args.seed)
        optimizer = torch.optim.Adam(agent.param, lr=2.3e-3)
    else:
        import keras

        from note_rl.agents.keras import DQN

        agent = DQN(4, [256, 256], 2, loss="huber", seed=args.seed)
        optimizer = keras.optimizers.Adam(learning_rate=2.3e-3)
    agent.set(policy=LinearEpsGreedyPolicy(1.0, 0.04, decay_steps=8000), pool_size=100_000, batch=64,
              train_freq=256, num_updates=128, update_steps=10, learning_starts=1000,
              trial_count=20, criterion=475.0, seed=args.seed)
    started = time.perf_counter()
    if args.backend == "torch":
        agent.train(optimizer, args.episodes, steps=50_000, p=10)
    else:
        agent.train(None, optimizer, args.episodes, steps=50_000, p=10)
    result = {"backend": args.backend, "episodes": agent.total_episode, "env_steps": agent.step_counter,
              "final_mean_return": float(np.mean(agent.reward_list[-20:])),
              "best_return": float(max(agent.reward_list)), "wall_time_s": time.perf_counter() - started}
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
