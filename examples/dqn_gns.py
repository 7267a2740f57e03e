"""DQN whose batch size and learning rate follow the gradient noise (Note_rl's ``adjust`` in
noise mode).

Note_rl style (default): ``adjust_func`` runs after each ``update_param()`` (every ``update_steps``
env steps) and calls ``self.adjust(target_noise=..., num_samples=...)`` every 20th time.  With
``--declarative`` the same is switched on without code, as a config would: ``agent.adjuster =
{"kind": "gns", ...}``, which uses McCandlish et al.'s ``B_simple`` (the batch moves towards it)::

    python examples/dqn_gns.py --backend torch --episodes 300
    python examples/dqn_gns.py --backend tf --episodes 300 --declarative
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

from note_rl.backends import backend_info
from note_rl.optim import Adam

BATCH = {"scale": 1.0, "min": 32, "max": 512, "align": 32}
LR = {"rate": 2e-4, "min": 1e-4, "max": 3e-3, "smooth": 0.2}
# the declarative form (a Hydra "adjuster" config holds the same keys)
ADJUSTER = {"kind": "gns", "every": 200, "num_samples": 8, "target_noise": 1.0,
            "batch_params": BATCH, "lr_params": LR}


def make_agent(backend: str, seed: int = 0, declarative: bool = False) -> Any:
    mod = importlib.import_module(backend_info(backend).agents)  # note_rl.agents.torch / .keras
    if declarative:
        agent = mod.DQN(4, 128, 2, seed=seed)
        agent.adjuster = ADJUSTER  # the loop runs it every ADJUSTER["every"] gradient steps
        return agent

    class DQN_gns(mod.DQN):
        syncs = 0

        def adjust_func(self) -> None:
            self.syncs += 1
            if self.syncs % 20 == 0:  # Note_rl's units: per-coordinate gradient variance
                self.adjust(target_noise=1e-3, num_samples=8, batch_params=BATCH, lr_params=LR)

    return DQN_gns(4, 128, 2, seed=seed)


def main(backend: str = "torch", episodes: int = 300, seed: int = 0, declarative: bool = False,
         callbacks: list[Any] | None = None) -> Any:
    from note_rl.policy import EpsGreedyQPolicy

    agent = make_agent(backend, seed, declarative)
    agent.set(policy=EpsGreedyQPolicy(0.05), pool_size=10000, batch=64, update_steps=10, seed=seed)
    optimizer = agent.backend.build_optimizer(Adam(lr=1e-3), agent.param)
    agent.fit(optimizer, episodes, callbacks=callbacks, p=10)
    return agent


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("torch", "tf"), default="torch")
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--declarative", action="store_true")
    args = parser.parse_args()
    trained = main(args.backend, args.episodes, args.seed, args.declarative)
    print(f"batch {trained.batch}, last returns {trained.reward_list[-5:]}")
