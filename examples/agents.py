"""One short, complete training script per built-in agent, in either backend.

Each function builds the agent with the settings that the tests and presets use, trains it for
``steps`` env steps and returns it; the defaults are the budgets at which it does what the docs
say (solves, improves, beats random play)::

    python examples/agents.py a2c                   # A2C solves CartPole-v1 (~45k steps)
    python examples/agents.py sac --backend tf      # SAC on Pendulum-v1, Keras backend
    python examples/agents.py ddpg_her --steps 6000 # DDPG + HER on the PointReach goal env
    python examples/agents.py maddpg                # MADDPG on PettingZoo MPE simple_spread (mpe2)
    python examples/agents.py trpo                  # TRPO solves CartPole-v1 (~35k steps)
    python examples/agents.py acer                  # ACER solves CartPole-v1 (~100-130k steps)
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any, Callable

from note_rl.backends import backend_info
from note_rl.noise import GaussianWhiteNoiseProcess
from note_rl.optim import Adam, OptimizerSpec, RMSprop
from note_rl.policy import LinearEpsGreedyPolicy


def _agents(backend: str) -> Any:
    return importlib.import_module(backend_info(backend).agents)  # note_rl.agents.torch / .keras


def _one(agent: Any, spec: OptimizerSpec) -> Any:
    """One optimizer over every parameter (one loss: DQN, PPO, A2C)."""
    return agent.backend.build_optimizer(spec, agent.backend.flatten(agent.param))


def _per_group(agent: Any, spec: OptimizerSpec) -> list[Any]:
    """One optimizer per parameter group, in ``agent.param`` order (actor, critic[, temperature])."""
    return [agent.backend.build_optimizer(spec, group) for group in agent.param]


def dqn(backend: str = "torch", steps: int = 50_000, seed: int = 0) -> Any:
    """Double DQN on CartPole-v1 (rl-zoo3's settings)."""
    agent = _agents(backend).DQN(4, [256, 256], 2, gamma=0.99, loss="huber", max_grad_norm=10.0, seed=seed)
    agent.set(policy=LinearEpsGreedyPolicy(1.0, 0.04, decay_steps=int(0.16 * steps)), pool_size=100_000,
              batch=64, train_freq=256, num_updates=128, update_steps=10, learning_starts=1000, seed=seed)
    agent.train(optimizer=_one(agent, Adam(lr=2.3e-3)), steps=steps)
    return agent


def ppo(backend: str = "torch", steps: int = 50_000, seed: int = 0) -> Any:
    """PPO on CartPole-v1 with vectorised rollouts (rl-zoo3's settings)."""
    agent = _agents(backend).PPO(4, [64, 64], 2, gamma=0.98, lam=0.8, n_steps=32, n_envs=8, n_epochs=20,
                                 max_grad_norm=0.5, linear_decay=True, activation="tanh", ortho_init=True,
                                 seed=seed)
    agent.set(batch=256, seed=seed, trial_count=20, criterion=475)
    agent.train(optimizer=_one(agent, Adam(lr=1e-3)), steps=steps)
    return agent


def ppo_gaussian(backend: str = "torch", steps: int = 50_000, seed: int = 0) -> Any:
    """PPO with a Gaussian policy on Pendulum-v1 (rl-zoo3's settings without gSDE)."""
    agent = _agents(backend).PPO(3, [64, 64], 1, n_steps=1024, n_envs=4, gamma=0.9, lam=0.95, n_epochs=10,
                                 activation="tanh", ortho_init=True, env="Pendulum-v1", seed=seed)
    agent.set(batch=64, seed=seed)
    agent.train(optimizer=_one(agent, Adam(lr=1e-3)), steps=steps)
    return agent


def a2c(backend: str = "torch", steps: int = 150_000, seed: int = 0) -> Any:
    """A2C on CartPole-v1 (rl-zoo3's settings, SB3's RMSprop)."""
    agent = _agents(backend).A2C(4, [64, 64], 2, n_envs=8, seed=seed)
    agent.set(seed=seed, trial_count=20, criterion=475)
    agent.train(optimizer=_one(agent, RMSprop(lr=7e-4, rho=0.99, eps=1e-5)), steps=steps)
    return agent


def trpo(backend: str = "torch", steps: int = 80_000, seed: int = 0) -> Any:
    """TRPO on CartPole-v1 (sb3-contrib's defaults).  The policy moves by the natural-gradient step
    inside the KL trust region, not by an optimizer: the optimizer trains the critic only."""
    agent = _agents(backend).TRPO(4, [64, 64], 2, env="CartPole-v1", seed=seed)
    agent.set(seed=seed, trial_count=20, criterion=475)
    agent.train(optimizer=agent.backend.build_optimizer(Adam(lr=1e-3), agent.param[1]), steps=steps)
    return agent


def acer(backend: str = "torch", steps: int = 200_000, seed: int = 0) -> Any:
    """ACER on CartPole-v1 (baselines' defaults, 4 envs: test_acer_solves_cartpole's settings)."""
    agent = _agents(backend).ACER(4, [64, 64], 2, env="CartPole-v1", seed=seed)
    agent.set(seed=seed, trial_count=20, criterion=475)
    agent.train(optimizer=_one(agent, RMSprop(lr=7e-4, rho=0.99, eps=1e-5)), steps=steps)
    return agent


def ddpg(backend: str = "torch", steps: int = 8_000, seed: int = 0) -> Any:
    """DDPG on Pendulum-v1, in the seed documents' form (dims from the env)."""
    agent = _agents(backend).DDPG(hidden_size=[64, 64], tau=0.005, gamma=0.98, env="Pendulum-v1", seed=seed)
    agent.set(noise=GaussianWhiteNoiseProcess(sigma=0.1, size=1), pool_size=100_000, batch=128,
              learning_starts=1000, seed=seed)
    agent.train(optimizer=_per_group(agent, Adam(lr=1e-3)), steps=steps)
    return agent


def td3(backend: str = "torch", steps: int = 15_000, seed: int = 0) -> Any:
    """TD3 on Pendulum-v1."""
    agent = _agents(backend).TD3(hidden_size=[64, 64], gamma=0.98, env="Pendulum-v1", seed=seed)
    agent.set(noise=GaussianWhiteNoiseProcess(sigma=0.1, size=1), pool_size=100_000, batch=128,
              learning_starts=1000, trial_count=10, criterion=-250, seed=seed)
    agent.train(optimizer=_per_group(agent, Adam(lr=1e-3)), steps=steps)
    return agent


def sac(backend: str = "torch", steps: int = 15_000, seed: int = 0) -> Any:
    """SAC on Pendulum-v1 (learned temperature: three parameter groups)."""
    agent = _agents(backend).SAC(hidden_size=[64, 64], env="Pendulum-v1", seed=seed)
    agent.set(pool_size=100_000, batch=128, learning_starts=100, trial_count=10, criterion=-250, seed=seed)
    agent.train(optimizer=_per_group(agent, Adam(lr=1e-3)), steps=steps)
    return agent


def ddpg_her(backend: str = "torch", steps: int = 6_000, seed: int = 0) -> Any:
    """DDPG + HER on PointReach (sparse reward; the same run with her_k=0 reaches ~8% of targets)."""
    agent = _agents(backend).DDPG(hidden_size=[64, 64], tau=0.05, gamma=0.95, env="note_rl/PointReach-v0",
                                  seed=seed)
    agent.set(noise=GaussianWhiteNoiseProcess(sigma=0.2, size=2), pool_size=100_000, batch=128,
              learning_starts=500, HER=True, her_k=4, seed=seed)
    agent.train(optimizer=_per_group(agent, Adam(lr=1e-3)), steps=steps)
    return agent


def maddpg(backend: str = "torch", steps: int = 10_000, seed: int = 0) -> Any:
    """MADDPG with 3 agents on PettingZoo MPE simple_spread (continuous actions)."""
    from note_rl.agents.maddpg import simple_spread

    agent = _agents(backend).MADDPG(env=simple_spread(continuous=True, n_agents=3), seed=seed)
    agent.set(noise=[GaussianWhiteNoiseProcess(sigma=0.1, size=5) for _ in range(3)], pool_size=100_000,
              batch=256, learning_starts=1000, train_freq=4, seed=seed)
    agent.train(optimizer=_per_group(agent, Adam(lr=1e-3)), steps=steps)
    return agent


EXAMPLES: dict[str, Callable[..., Any]] = {f.__name__: f for f in (dqn, ppo, ppo_gaussian, a2c, trpo, acer, ddpg,
                                                                   td3, sac, ddpg_her, maddpg)}

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("agent", choices=sorted(EXAMPLES))
    parser.add_argument("--backend", choices=("torch", "tf"), default="torch")
    parser.add_argument("--steps", type=int, default=None, help="env steps (default: the example's budget)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    kwargs = {"steps": args.steps} if args.steps else {}
    trained = EXAMPLES[args.agent](args.backend, seed=args.seed, **kwargs)
    if args.agent == "maddpg":
        print(f"greedy team return: {trained.team_return(20, seed=500):.1f}")
    else:
        print(f"mean of the last 10 episodes: {sum(trained.reward_list[-10:]) / 10:.1f}")
