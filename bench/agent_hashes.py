"""Train each built-in agent a few hundred env steps from one seed and print a hash of its weights.

    python bench/agent_hashes.py [--backend torch|tf]

Run it on two checkouts (``PYTHONPATH=<checkout> python bench/agent_hashes.py``: the script imports
``note_rl`` from ``PYTHONPATH``, so an older checkout needs no copy of it): the same hashes and
gradient-step counts mean a change kept the agents' behaviour (a move of code, a refactor of a
constructor).  A few seconds per backend, after the framework's import.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from typing import Any

import numpy as np


def _leaves(x: Any) -> list[Any]:
    return [y for g in x for y in _leaves(g)] if isinstance(x, (list, tuple)) else [x]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["torch", "tf"], default="torch")
    backend = parser.parse_args().backend
    if backend == "torch":
        import torch

        torch.set_num_threads(1)
        import note_rl.agents.torch as m

        def adam(params: Any) -> Any:
            return torch.optim.Adam(params, lr=1e-3)

        def arrays(agent: Any) -> list[np.ndarray]:
            return [w.detach().cpu().numpy() for w in _leaves(agent.param)]
    else:
        import tensorflow as tf

        import note_rl.agents.keras as m

        def adam(params: Any) -> Any:
            return tf.keras.optimizers.Adam(1e-3)

        def arrays(agent: Any) -> list[np.ndarray]:
            return [np.asarray(w.numpy()) for w in _leaves(agent.param)]
    from note_rl.noise import GaussianWhiteNoiseProcess

    out = {}

    def run(name: str, agent: Any, steps: int) -> None:
        grouped = isinstance(agent.param[0], (list, tuple))
        agent.train(optimizer=[adam(p) for p in agent.param] if grouped else adam(agent.param), steps=steps)
        digest = hashlib.sha256()
        for w in arrays(agent):
            digest.update(np.ascontiguousarray(w, dtype=np.float32).tobytes())
        out[name] = [digest.hexdigest()[:16], int(agent.batch_counter)]

    agent = m.DQN(4, [64, 64], 2, seed=0)
    agent.set(pool_size=5000, batch=32, learning_starts=100, seed=0)
    run("dqn", agent, 600)
    agent = m.PPO(4, [64, 64], 2, n_steps=32, n_envs=2, n_epochs=2, seed=0)
    agent.set(batch=32, seed=0)
    run("ppo", agent, 640)
    agent = m.PPO(4, 64, 2, seed=0)  # Note_rl's replay mode
    agent.set(pool_size=2000, batch=32, update_steps=50, seed=0)
    run("ppo_replay", agent, 300)
    agent = m.A2C(4, [64, 64], 2, n_envs=4, seed=0)
    agent.set(seed=0)
    run("a2c", agent, 400)
    for name, cls in (("ddpg", m.DDPG), ("td3", m.TD3), ("sac", m.SAC)):
        agent = cls(hidden_size=[64, 64], seed=0)
        if name != "sac":
            agent.set(noise=GaussianWhiteNoiseProcess(sigma=0.1, size=agent.action_dim, seed=0))
        agent.set(pool_size=5000, batch=32, learning_starts=100, seed=0)
        run(name, agent, 300)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
