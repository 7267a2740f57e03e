"""``python -m note_rl``: train the default agent (DQN, PyTorch) on CartPole-v1 and print the result.

Options: ``--backend tf``, ``--episodes N``, ``--seed S``.  The full Hydra app is ``python -m tuner``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import time

import numpy as np

from note_rl.backends import backend_info, backend_names, get_backend


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m note_rl", description=__doc__)
    parser.add_argument("--backend", choices=backend_names(), default="torch")
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    from note_rl.optim import Adam
    from note_rl.policy import LinearEpsGreedyPolicy

    backend = get_backend(args.backend)
    agents = importlib.import_module(backend_info(args.backend).agents)
    agent = agents.DQN(4, [256, 256], 2, loss="huber", seed=args.seed)
    optimizer = backend.build_optimizer(Adam(lr=2.3e-3), backend.flatten(agent.param))
    agent.set(policy=LinearEpsGreedyPolicy(1.0, 0.04, decay_steps=8000), pool_size=100_000, batch=64,
              train_freq=256, num_updates=128, update_steps=10, learning_starts=1000,
              trial_count=20, criterion=475.0, seed=args.seed)
    started = time.perf_counter()
    agent.fit(optimizer, args.episodes, steps=50_000, p=10)
    result = {"backend": args.backend, "episodes": agent.total_episode, "env_steps": agent.step_counter,
              "final_mean_return": float(np.mean(agent.reward_list[-20:])),
              "best_return": float(max(agent.reward_list)), "wall_time_s": time.perf_counter() - started}
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
