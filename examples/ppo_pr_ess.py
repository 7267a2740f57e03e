"""PPO with prioritized replay whose buffer and batch follow the ESS (Note_rl's ``PPO_pr`` example).

After every ``update_param()`` the loop asks ``window_size_func(p)`` how many of the oldest items
to drop: ``adjust_window_size`` keeps about EMA(ESS) items of each buffer segment.  ``adjust_func``
runs after gradient steps (and, in pool mode, once per collection phase) and, with no
``target_ess``, sets the batch to the ESS rounded down to a multiple of the initial batch (never
below it, never above the buffer length).  Both backends::

    python examples/ppo_pr_ess.py --backend torch --episodes 200
    python examples/ppo_pr_ess.py --backend tf --episodes 200 --pool 2
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

from note_rl.backends import backend_info
from note_rl.optim import Adam


def make_agent(backend: str, seed: int = 0) -> Any:
    mod = importlib.import_module(backend_info(backend).agents)  # note_rl.agents.torch / .keras

    class PPO_pr(mod.PPO):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.batch_params = {"scale": 1.0, "min": None, "max": None, "align": None}

        def window_size_func(self, p: int | None = None) -> int:
            return self.adjust_window_size(p)

        def adjust_func(self) -> None:
            if self.batch_counter % 10 == 0:  # Note_rl adjusted after every batch; every 10 is enough
                self.adjust(batch_params=self.batch_params)

    return PPO_pr(4, 64, 2, seed=seed)


def optimizers(agent: Any) -> list[Any]:
    """Note_rl's pair: Adam(1e-4) for the policy, Adam(5e-3) for the value function (built by the
    agent's backend: torch.optim.Adam or keras.optimizers.Adam)."""
    build = agent.backend.build_optimizer
    return [build(Adam(lr=1e-4), agent.param[0]), build(Adam(lr=5e-3), agent.param[1])]


def main(backend: str = "torch", episodes: int = 200, seed: int = 0, pool: int = 0,
         update_steps: int = 500, batch: int = 64, callbacks: list[Any] | None = None) -> Any:
    """Train the agent and return it; ``batch`` is the initial batch (and, by default, the
    alignment of every later batch)."""
    from note_rl.policy import SoftmaxPolicy

    agent = make_agent(backend, seed)
    agent.set(policy=SoftmaxPolicy(), pool_size=10000, batch=batch, update_steps=update_steps, PR=True,
              seed=seed)
    agent.fit(optimizers(agent), episodes, pool_network=pool > 0, processes=pool or None,
              window_size=agent.window_size_func, callbacks=callbacks, p=10)
    return agent


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("torch", "tf"), default="torch")
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pool", type=int, default=0, help="worker processes (0: single process)")
    parser.add_argument("--batch", type=int, default=64, help="initial batch (and its alignment)")
    args = parser.parse_args()
    trained = main(args.backend, args.episodes, args.seed, args.pool, batch=args.batch)
    print(f"batch {trained.batch}, buffer {len(trained.buffer)}, last returns {trained.reward_list[-5:]}")
